// type_name: StringBox

export interface Box<T> {
  value: T;
  label: string;
}

export type StringBox = Box<string>;
