// type_name: SentimentResponse

// TypeChat's sentiment example as it is often written: nothing exported.
interface SentimentResponse {
    sentiment: Sentiment; // the sentiment of the text
    highlights: Pair<string>;
}

type Sentiment = "negative" | "neutral" | "positive";

// the two phrases that decided it
type Pair<T> = [T, T];
