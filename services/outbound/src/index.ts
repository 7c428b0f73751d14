/** Guarded outbound HTTP shared by every Lore service (filled in by the move out of the gateway's webhooks). */
export {};
