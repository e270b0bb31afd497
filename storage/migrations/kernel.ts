// The kernel's schema. One list for PGlite and Postgres alike (both are Postgres). Migrations are append-only:
// never edit one that has shipped; add the next.
import type { Migration } from "../../contracts/migration.ts";

export const kernelMigrations: Migration[] = [
  {
    name: "kernel/0001_init",
    statements: [
      `create table partners (
        id text primary key,
        name text not null,
        api_key_hash text not null unique,
        api_key_prefix text not null,
        pricing_tier text not null default 'api_plus10' check (pricing_tier in ('api_plus10','standard','custom')),
        credits_remaining bigint not null default 0 check (credits_remaining >= 0),
        is_active boolean not null default true,
        features jsonb not null default '{}',
        limits jsonb not null default '{}',
        custom_rates jsonb not null default '{}',
        created_at timestamptz not null default now(),
        last_active timestamptz
      )`,
      `create table ledger (
        id bigserial primary key,
        partner_id text not null references partners(id),
        amount bigint not null,
        type text not null check (type in ('usage','refund','purchase','adjustment')),
        description text not null,
        endpoint text,
        job_id text,
        created_at timestamptz not null default now()
      )`,
      `create index ledger_partner_newest on ledger (partner_id, id desc)`,
      // A second refund for the same job cannot be written, whatever the code above it does.
      `create unique index ledger_one_refund_per_job on ledger (job_id) where type = 'refund'`,
      // Every svc- id ever handed out, whatever its kind: the spec's ids share one namespace.
      `create table service_ids (id text primary key)`,
      `create table jobs (
        id text primary key,
        partner_id text not null references partners(id),
        plugin text not null,
        kind text not null,
        endpoint text not null,
        state text not null,
        partner_job_id text,
        credits_used bigint not null default 0,
        credits_refunded bigint not null default 0,
        holds_inflight_slot boolean not null default false,
        progress integer,
        message text,
        input jsonb,
        output jsonb,
        error text,
        created_at timestamptz not null default now(),
        updated_at timestamptz not null default now(),
        finished_at timestamptz
      )`,
      `create index jobs_partner_newest on jobs (partner_id, created_at desc)`,
      `create index jobs_inflight on jobs (partner_id) where holds_inflight_slot`,
      // Calls per partner, endpoint and second: GET /usage filters by `since` to the second without a row per call.
      `create table usage_calls (
        partner_id text not null references partners(id),
        endpoint text not null,
        second timestamptz not null,
        calls bigint not null,
        primary key (partner_id, second, endpoint)
      )`,
      `create table settings (key text primary key, value jsonb not null)`,
    ],
  },
  {
    // Events and webhooks (spec part 1 "Events", "Webhook settings and delivery records"). An event's body
    // is stored as text, fixed at creation, so every attempt resends the same bytes.
    name: "kernel/0002_webhooks",
    statements: [
      `alter table jobs add column callback_url text`,
      `create table webhook_settings (
        partner_id text primary key references partners(id),
        url text,
        secret text,
        updated_at timestamptz not null default now()
      )`,
      `create table webhook_events (
        id text primary key,
        partner_id text not null references partners(id),
        job_id text,
        event text not null,
        body text not null,
        created_at timestamptz not null default now()
      )`,
      `create table webhook_deliveries (
        id bigserial primary key,
        event_id text not null references webhook_events(id),
        partner_id text not null references partners(id),
        job_id text,
        url text not null,
        status text not null,
        attempt integer not null default 0,
        max_attempts integer not null,
        last_status_code integer,
        last_error text,
        created_at timestamptz not null default now(),
        last_attempt_at timestamptz,
        next_attempt_at timestamptz,
        delivered_at timestamptz
      )`,
      `create index webhook_deliveries_partner_newest on webhook_deliveries (partner_id, id desc)`,
      `create index webhook_deliveries_partner_job on webhook_deliveries (partner_id, job_id)`,
    ],
  },
  {
    // Files kept for a window (core/retention.ts): the full blob key and when it may be removed.
    name: "kernel/0003_retained_blobs",
    statements: [
      `create table retained_blobs (
        key text primary key,
        expires_at timestamptz not null
      )`,
      `create index retained_blobs_due on retained_blobs (expires_at)`,
    ],
  },
  {
    // Jobs charged as one group (an Omni batch's sections): the in-flight cap counts a group once.
    name: "kernel/0004_job_groups",
    statements: [
      `alter table jobs add column group_id text`,
      `create index jobs_group on jobs (group_id) where group_id is not null`,
    ],
  },
  {
    // Parts of one job's charge it refunds one by one, each once (a Script Runner run's scenes): a refund row
    // names its part, and the one-refund-per-job index becomes one per job and part (the job's own refund,
    // of whatever its parts did not return, is the part-less one).
    name: "kernel/0005_job_shares",
    statements: [
      `alter table ledger add column part integer`,
      `drop index ledger_one_refund_per_job`,
      `create unique index ledger_one_refund_per_job_part on ledger (job_id, coalesce(part, -1)) where type = 'refund'`,
      `create table job_shares (
        job_id text not null references jobs(id),
        idx integer not null,
        credits integer not null check (credits >= 0),
        refunded boolean not null default false,
        primary key (job_id, idx)
      )`,
    ],
  },
  {
    // Idempotency-Key on POSTs that create a job (core/idempotency.ts): one row per account and key, claimed
    // in the charge's transaction, with the first response once it is known.
    name: "kernel/0006_idempotency_keys",
    statements: [
      `create table idempotency_keys (
        partner_id text not null references partners(id),
        key text not null,
        endpoint text not null,
        request_hash text not null,
        job_id text,
        status integer,
        body text,
        created_at timestamptz not null,
        primary key (partner_id, key)
      )`,
      `create index idempotency_keys_created on idempotency_keys (created_at)`,
    ],
  },
  {
    // The delivery loop (core/webhook-delivery.ts) claims due rows itself instead of one queue job per
    // attempt: a claim's lease, and the index its claim scans. Deliveries a queue job still stood for are
    // pending rows with their next_attempt_at, so they are claimed like any other.
    name: "kernel/0007_webhook_delivery_claims",
    statements: [
      `alter table webhook_deliveries add column claimed_until timestamptz`,
      `create index webhook_deliveries_due on webhook_deliveries (next_attempt_at) where status = 'pending'`,
    ],
  },
  {
    // A job waiting on an upstream (core/upstream-waits.ts): the provider's handle, and the sequence number
    // that lets exactly one queue job poll it. Looked up by upstream id when a provider calls back.
    name: "kernel/0008_job_waits",
    statements: [
      `create table job_waits (
        job_id text primary key references jobs(id),
        step text not null,
        provider text not null,
        upstream_id text not null,
        handle jsonb not null,
        seq integer not null default 0,
        parked boolean not null default false,
        claimed_by text,
        wake boolean not null default false,
        done boolean not null default false,
        polls integer not null default 0,
        errors integer not null default 0,
        submitted_at timestamptz not null,
        deadline_at timestamptz not null,
        next_poll_at timestamptz
      )`,
      `create index job_waits_upstream on job_waits (provider, upstream_id)`,
    ],
  },
  {
    // Leases (core/leases.ts): "a live process is working on this". A process renews every lease it owns with
    // one statement while it lives; a lease past expires_at belongs to a dead owner, and its work is recovered
    // (a synchronous job finished or refunded, an Idempotency-Key answered, a captions finalize taken over).
    name: "kernel/0009_leases",
    statements: [
      `create table leases (
        key text primary key,
        owner text not null,
        expires_at timestamptz not null
      )`,
      `create index leases_owner on leases (owner)`,
    ],
  },
  {
    // The attempts of a job that failed (its runner threw an error that is not transient), counted by the job
    // runtime against the kind's `retries`: a crash or a transient error (lib/transient.ts) is not counted
    // here, only in the queue's larger retry budget (core/jobs.ts JOB_CRASH_RETRIES).
    name: "kernel/0010_job_failed_attempts",
    statements: [`alter table jobs add column failed_attempts integer not null default 0`],
  },
];
