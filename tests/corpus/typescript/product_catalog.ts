// type_name: CatalogPage

interface Identified {
  id: string;
}

interface Timestamped {
  createdAt: Date;
  updatedAt?: Date;
}

export interface Product extends Identified, Timestamped {
  name: string;
  price: Money;
  stars: 1 | 2 | 3 | 4 | 5;
  tags: string[];
  variants?: Variant[];
}

export type Variant = Omit<Product, "variants" | "createdAt" | "updatedAt"> & { sku: string };

export interface Money {
  amountCents: number;
  currency: "USD" | "EUR" | "GBP";
}

export interface CatalogPage {
  products: Product[];
  page: number;
  hasMore: boolean;
}
