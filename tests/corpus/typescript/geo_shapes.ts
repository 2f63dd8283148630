// type_name: FeatureCollection

export type Position = [longitude: number, latitude: number, altitude?: number];

export type Geometry =
  | { type: "Point"; coordinates: Position }
  | { type: "LineString"; coordinates: Position[] }
  | { type: "Polygon"; coordinates: Position[][] };

export interface Feature {
  type: "Feature";
  geometry: Geometry | null;
  properties: { [key: string]: string | number | boolean | null };
}

export interface FeatureCollection {
  type: "FeatureCollection";
  features: ReadonlyArray<Feature>;
  bbox?: [number, number, number, number];
}
