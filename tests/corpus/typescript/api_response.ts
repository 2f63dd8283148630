// type_name: ApiResponse

export interface User {
  id: number;
  email: string;
  name: string | null;
  active: boolean;
}

export interface ErrorInfo {
  code: "not_found" | "forbidden" | "rate_limited" | "internal";
  message: string;
  retryAfterSeconds?: number;
}

export type ApiResponse =
  | { ok: true; data: User[]; nextPage?: number }
  | { ok: false; error: ErrorInfo };
