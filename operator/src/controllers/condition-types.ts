/** Kind-specific condition types, beside Ready / Reconciling / Stalled. */
export const PROVISIONED = 'Provisioned';
export const KEY_ISSUED = 'KeyIssued';
export const INGRESS_READY = 'IngressReady';
