// type_name: AssistantTurn

export type Role = "assistant";

/** A call the assistant wants to make. */
export interface ToolCall {
  id: string;
  name: "get_weather" | "search_web" | "send_email";
  /** Arguments, as the tool's JSON schema describes them */
  arguments: Record<string, unknown>;
}

export interface AssistantTurn {
  role: Role;
  content: string | null;
  tool_calls?: ToolCall[];
  finish_reason: "stop" | "tool_calls" | "length";
}
