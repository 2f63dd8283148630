// type_name: API

// TypeChat's "program" schemas describe an API of functions: a program, not
// JSON data, so this is refused.

type Item = { name: string; price: number };

interface API {
    // Search the catalog.
    search(query: string): Item[];
    // Add an item to the cart.
    addToCart(item: Item, quantity: number): void;
}
