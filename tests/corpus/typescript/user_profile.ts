// type_name: UserProfile

/**
 * A user's public profile.
 */
export interface UserProfile {
  /** Unique handle, lower case */
  handle: string;
  displayName: string;
  bio?: string | undefined;
  /** When the account was created */
  createdAt: Date;
  website?: string;
  links: Record<string, string>;
  roles: readonly Role[];
  settings: {
    theme: "light" | "dark";
    emailNotifications: boolean;
    language: string;
  };
}

export type Role = "reader" | "writer" | "editor" | "admin";
