// type_name: Button

export interface Button {
  label: string;
  disabled?: boolean;
  onClick: (event: MouseEvent) => void;
}
