// type_name: SettingsPatch
// A settings document and the patch a model may emit: every level optional,
// arrays kept whole (DeepPartial as utility-type libraries write it).

type Primitive = string | number | boolean | null;

export type DeepPartial<T> = T extends Primitive
  ? T
  : T extends readonly (infer E)[]
    ? DeepPartial<E>[]
    : { [K in keyof T]?: DeepPartial<T[K]> };

interface Settings {
  theme: "light" | "dark" | "system";
  editor: {
    fontSize: number;
    tabSize: 2 | 4 | 8;
    rulers: number[];
  };
  notifications: {
    email: boolean;
    digest: "daily" | "weekly" | null;
  };
  /** Shortcut bindings: command and keys. */
  keybindings: { command: string; keys: string }[];
}

export type SettingsPatch = DeepPartial<Settings>;
