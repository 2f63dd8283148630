// type_name: SentimentResponse

// The following is a schema definition for determining the sentiment of some user input.
export interface SentimentResponse {
  /** The sentiment of the text. */
  sentiment: "negative" | "neutral" | "positive";
  /** How sure the classifier is, from 0 to 1. */
  confidence?: number;
}
