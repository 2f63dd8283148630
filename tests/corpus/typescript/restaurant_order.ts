// type_name: Order

export interface Order {
    items: (OrderItem | UnknownText)[];
}

export type OrderItem = Pizza | Beer | Salad | NamedPizza;

export interface UnknownText {
    itemType: 'unknown';
    text: string;
}

export interface Pizza {
    itemType: 'pizza';
    size?: 'small' | 'medium' | 'large' | 'extra large';
    addedToppings?: string[];
    removedToppings?: string[];
    quantity?: number;
    name?: 'Hawaiian' | 'Yeti' | 'Pig In a Forest' | 'Cherry Bomb';
}

export interface NamedPizza extends Pizza {
}

export interface Beer {
    itemType: 'beer';
    kind: string;
    quantity?: number;
}

export const saladSize = ['half', 'whole'];

export interface Salad {
    itemType: 'salad';
    portion?: string;
    style?: string;
    addedIngredients?: string[];
    removedIngredients?: string[];
    quantity?: number;
}
