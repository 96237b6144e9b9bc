-- payonce ledger, version 9: tombstones found by their provider reference.
--
-- Some provider events name the object only by the provider's id, never by
-- payonce's operation id (a Stripe dispute names its PaymentIntent, and a
-- Dispute carries no metadata). When Cleanup has removed the operation, the
-- event must still find its tombstone, so that a chargeback weeks later
-- reopens the operation for review instead of being kept as unmatched.
-- Partial: most lookups are by id, and a tombstone without a reference is
-- never found this way.
CREATE INDEX payonce_tombstones_provider_ref
    ON payonce_tombstones (provider, kind, provider_ref)
    WHERE provider_ref IS NOT NULL;
