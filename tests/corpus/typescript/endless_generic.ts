// type_name: Nested

// Each level asks for a larger argument: the expansion never ends.
type Deeper<T> = { value: T; more?: Deeper<T[]> };

type Nested = Deeper<string>;
