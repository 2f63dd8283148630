// type_name: FlagConfig

export interface Flag {
  enabled: boolean;
  rolloutPercent?: number;
  variants?: string[];
  owner: string;
}

export interface FlagConfig {
  version: 2;
  environment: "dev" | "staging" | "prod";
  flags: { [name: string]: Flag };
}
