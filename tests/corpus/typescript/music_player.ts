// type_name: PlayerActions

/** A list of actions for a music player. */
export type PlayerActions = { actions: PlayerAction[] };

export type PlayerAction =
  | { type: "play"; track?: TrackRef; shuffle?: boolean }
  | { type: "pause" }
  | { type: "next" }
  | { type: "previous" }
  | { type: "setVolume"; /** 0 to 100 */ volume: number }
  | { type: "queue"; tracks: TrackRef[] }
  | { type: "search"; query: string; kind: "track" | "album" | "artist" | "playlist"; limit?: 5 | 10 | 20 };

export interface TrackRef {
  title: string;
  artist?: string;
  album?: string;
  year?: number;
}
