// type_name: Expr

// An arithmetic expression: a number, a variable, or an operation on sub-expressions.
export type Expr = number | Variable | Operation;

export interface Variable {
  kind: "var";
  name: string;
}

export interface Operation {
  kind: "op";
  operator: "+" | "-" | "*" | "/" | "^";
  operands: [Expr, Expr];
}
