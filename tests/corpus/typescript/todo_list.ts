// type_name: TodoList

export enum Priority {
  Low = "low",
  Medium = "medium",
  High = "high",
}

export enum Status { Open, InProgress, Done = 10, Archived }

export interface Task {
  title: string;
  priority: Priority;
  status: Status;
  // [year, month, day]
  due?: [number, number, number];
  tags: string[];
  subtasks?: Task[];
}

export interface TodoList {
  owner: string;
  tasks: Task[];
  pinned?: Task;
}
