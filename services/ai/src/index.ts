/** AI ports shared by every Lore service (filled in by the move out of services/graph). */
export {};
