// type_name: ClientState
// Names derived from other names: key remapping with template literal
// types, a filter that keeps the nullable members, and a loading flag
// per resource.

interface Resources {
  user: { id: string; name: string };
  orders: { id: string; total: number }[];
  cart: { items: number } | null;
}

type LoadingFlags = { [K in keyof Resources as `${K}Loading`]: boolean };
type ErrorFields = { [K in keyof Resources as `${K}Error`]?: string };
type Nullable<T> = { [K in keyof T as null extends T[K] ? K : never]: T[K] };

export type ClientState = Resources & LoadingFlags & ErrorFields & {
  /** Members that may be null, repeated for the view layer. */
  nullable: Nullable<Resources>;
};
