// type_name: PointerReport
// A discriminated union of UI events, narrowed with Extract and Exclude,
// and an alias that pulls out the payload of a chosen event kind.

export type UiEvent =
  | { kind: "click"; x: number; y: number; button: "left" | "right" }
  | { kind: "scroll"; deltaY: number }
  | { kind: "key"; key: string; modifiers: ("ctrl" | "alt" | "shift")[] }
  | { kind: "focus" }
  | { kind: "blur" };

type PointerEvent = Extract<UiEvent, { x: number }>;
type Quiet = Exclude<UiEvent, { kind: "scroll" | "key" | "click" }>;
type PayloadOf<K extends UiEvent["kind"]> = Omit<Extract<UiEvent, { kind: K }>, "kind">;

export interface PointerReport {
  pointer: PointerEvent[];
  quiet: Quiet["kind"][];
  lastKey: PayloadOf<"key"> | null;
}
