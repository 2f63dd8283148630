// type_name: Directory

export interface File {
  kind: "file";
  name: string;
  sizeBytes: number;
  modified: Date;
}

export interface Directory {
  kind: "directory";
  name: string;
  entries: Entry[];
}

export type Entry = File | Directory | Symlink;

export type Symlink = { kind: "symlink"; name: string; target: string };
