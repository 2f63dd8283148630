// type_name: Recipe

export const enum Unit {
  Gram = "g",
  Millilitre = "ml",
  Piece = "pc",
  Teaspoon = "tsp",
  Tablespoon = "tbsp",
}

export enum Difficulty { Easy = 1, Medium, Hard }

export type Ingredient = {
  name: string;
  amount: number;
  unit: Unit;
  optional?: boolean;
};

export type Recipe = {
  title: string;
  servings: number;
  difficulty: Difficulty;
  ingredients: Ingredient[];
  steps: string[];
  nutrition?: {
    kcal: number;
    proteinGrams: number;
  };
  vegetarian: boolean;
};
