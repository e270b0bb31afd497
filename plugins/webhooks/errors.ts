// Every text the webhooks plugin answers with (spec part 1, "Webhook management"; the choices where the spec
// is silent are in operations.ts).
export const WEBHOOK_ERRORS = {
  notPublic: "url must be a public https URL",
  urlType: "url must be a string or null",
  rotateSecret: "rotate_secret must be true or false",
  noUrl: "No webhook URL configured. Set one with POST /webhook or pass url.",
  noResendUrl: "No webhook URL configured. Set one with POST /webhook.",
  eventNotFound: "Event not found",
  stillPending: "A delivery of this event is still pending",
} as const;
