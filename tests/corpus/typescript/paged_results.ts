// type_name: UserPage

// An API answer: a page of results, each a success or a failure, with
// nested generics and a default type parameter.

interface User {
    id: number;
    name: string;
    roles: ("admin" | "editor" | "viewer")[];
}

type Result<T, E = { code: number; message: string }> =
    | { ok: true; value: T }
    | { ok: false; error: E };

interface Page<T> {
    items: T[];
    /** Where the next page starts; absent on the last page. */
    cursor?: string;
    total: number;
}

type UserPage = Page<Result<User>>;
