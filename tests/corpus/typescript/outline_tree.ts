// type_name: Outline

// A document outline: a recursive generic tree, instantiated twice.

type Tree<T> = {
    node: T;
    children: Tree<T>[];
};

interface Heading {
    level: 1 | 2 | 3;
    title: string;
}

interface Outline {
    title: string;
    sections: Tree<Heading>[];
    tags?: Tree<string>;
}
