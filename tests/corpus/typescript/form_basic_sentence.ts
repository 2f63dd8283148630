// type_name: BasicSentence

export type BasicSentence {
  text: string;
}
