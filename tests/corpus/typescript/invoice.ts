// type_name: Invoice

interface Party {
  name: string;
  vatId?: string;
  address: string;
}

interface Header {
  number: string;
  issued: Date;
  seller: Party;
  buyer: Pick<Party, "name" | "address">;
}

export type Line = {
  description: string;
  quantity: number;
  unitPrice: number;
  taxRate: 0 | 0.07 | 0.19;
};

export type Invoice = Header & {
  lines: Line[];
  currency: "EUR" | "USD";
  notes?: string;
} & Partial<{ paid: boolean; paidOn: Date }>;
