package ledgertest

import "testing"

// Run runs the conformance suite against a store. newHarness must return a
// fresh, empty, migrated store for the subtest it is given (its own schema or
// file, cleaned up with t.Cleanup); the subtests run in parallel.
//
// Subtests that need OpenAnother, Reopen, SetRawStatus, SetRawEventKind or
// BlockWrites are skipped when the harness leaves them nil.
func Run(t *testing.T, newHarness func(t *testing.T) *Harness) {
	t.Helper()
	for _, g := range suite() {
		t.Run(g.name, func(t *testing.T) {
			t.Parallel()
			for _, c := range g.cases {
				t.Run(c.name, func(t *testing.T) {
					t.Parallel()
					h := newHarness(t)
					if h == nil || h.Store == nil {
						t.Fatal("ledgertest: newHarness returned no store")
					}
					c.run(t, h)
				})
			}
		})
	}
}

type testCase struct {
	name string
	run  func(t *testing.T, h *Harness)
}

type group struct {
	name  string
	cases []testCase
}

func suite() []group {
	return []group{
		{"Begin", []testCase{
			{"NewOperationIsPendingAndLeased", testBeginNewOperation},
			{"StartsFirstAttempt", testBeginStartsAttempt},
			{"ReentrantForOwner", testBeginReentrant},
			{"OwnInFlightBecomesUnknown", testBeginOwnInFlight},
			{"UnknownIsClaimedWithoutAttempt", testBeginUnknown},
			{"LiveLeaseOfAnotherOwner", testBeginInProgress},
			{"TimesAreUTCMicroseconds", testTimesAreUTCMicroseconds},
		}},
		{"CreateOrGet", []testCase{
			{"CreatesPendingDueNow", testCreateOrGetCreates},
			{"ReturnsExistingUnchanged", testCreateOrGetExisting},
		}},
		{"Fingerprint", []testCase{
			{"MismatchChangesNothing", testFingerprintMismatch},
		}},
		{"TerminalReplay", []testCase{
			{"ReturnsRecordedResult", testTerminalReplay},
		}},
		{"Claim", []testCase{
			{"TakesLeaseOnPending", testClaimPending},
			{"ReentrantForOwner", testClaimReentrant},
			{"RefusesTerminal", testClaimTerminal},
			{"NotFound", testClaimNotFound},
		}},
		{"Lease", []testCase{
			{"ExpiryHandsOverToAnotherOwner", testLeaseExpiry},
			{"ExpiredInFlightBecomesUnknown", testLeaseExpiredInFlight},
			{"StolenLeaseChangesNothing", testStolenLease},
			{"NeverGrantedLapsed", testLeaseNotGrantedLapsed},
		}},
		{"StartAttempt", []testCase{
			{"FromPendingAndUnknown", testStartAttempt},
			{"OwnExpiredLeaseNotTaken", testStartAttemptOwnExpiredLease},
			{"RequiresLease", testStartAttemptRequiresLease},
			{"RefusedOutsidePendingAndUnknown", testStartAttemptRefused},
			{"NotFound", testStartAttemptNotFound},
		}},
		{"Finish", []testCase{
			{"LegalTransitions", testLegalTransitions},
			{"IllegalTransitions", testIllegalTransitions},
			{"NextCheckAtDefaultsToNow", testFinishNextCheckAt},
			{"KeepLease", testFinishKeepLease},
			{"StaleExpectations", testFinishStale},
			{"EarlierAttemptIsNotCurrent", testFinishStaleEarlierAttempt},
			{"AttemptMustBeLatestAndOpen", testFinishAttemptLatestAndOpen},
			{"RequiresLease", testFinishRequiresLease},
			{"OwnExpiredLeaseNotTaken", testFinishOwnExpiredLease},
			{"ProviderRefAndResult", testFinishProviderRefAndResult},
			{"Review", testFinishReview},
			{"ReviewCodeRoundTrips", testReviewCodes},
			{"NotFound", testFinishNotFound},
		}},
		{"KeyWindow", []testCase{
			{"OpensSurvivesAndCloses", testKeyWindow},
		}},
		{"Attempts", []testCase{
			{"Bookkeeping", testAttemptBookkeeping},
			{"Replayed", testAttemptReplayed},
		}},
		{"Concurrency", []testCase{
			{"BeginHasOneWinner", testConcurrentBegin},
			{"ClaimHasOneWinner", testConcurrentClaim},
			{"BeginHasOneWinnerAcrossStores", testConcurrentBeginTwoStores},
			{"ClaimHasOneWinnerAcrossStores", testConcurrentClaimTwoStores},
			{"ClaimPendingHasOneWinnerAcrossStores", testConcurrentClaimPendingTwoStores},
			{"ClaimDueReturnsEachOnce", testConcurrentClaimDue},
			{"ClaimDueReturnsEachOnceAcrossStores", testConcurrentClaimDueTwoStores},
		}},
		{"ClaimDue", []testCase{
			{"Batches", testClaimDueBatches},
			{"OrderedByNextCheckAtThenID", testClaimDueOrder},
			{"ProviderFilter", testClaimDueProvider},
			{"SkipsLiveLeases", testClaimDueSkipsLeased},
			{"ExpiredInFlightAsUnknown", testClaimDueExpiredInFlight},
			{"ReviewOnlyWhenAsked", testClaimDueReview},
			{"SkipsFinalAndNotDue", testClaimDueSkipsFinal},
		}},
		{"List", []testCase{
			{"FiltersAndPaging", testList},
			{"DefaultLimit", testListDefaultLimit},
			{"CreatedRange", testListCreatedRange},
			{"ProviderRefAndKey", testListProviderRefAndKey},
			{"ProviderRefAndKeyEmpty", testListProviderRefEmpty},
		}},
		{"ListReview", []testCase{
			{"FiltersAndOrder", testListReview},
			{"KeysetPages", testListReviewKeyset},
		}},
		{"Resolve", []testCase{
			{"Succeeded", testResolveSucceeded},
			{"Failed", testResolveFailed},
			{"Resend", testResolveResend},
			{"BeginAfterResendUsesNewKey", testResolveResendThenBegin},
			{"ResendGeneration", testResolveResendGeneration},
			{"ResendWindowIgnoresEarlierGenerations", testResolveResendWindow},
			{"KeyConflict", testResolveKeyConflict},
			{"NotInReview", testResolveNotInReview},
			{"RefusedAfterUnseenEvents", testResolveEventsSeen},
		}},
		{"Cleanup", []testCase{
			{"RetentionTooShort", testCleanupRetentionTooShort},
			{"Batches", testCleanupBatches},
			{"KeepsLiveRowsAndOpenWindows", testCleanupKeeps},
		}},
		{"Tombstone", []testCase{
			{"LateBeginGetsRecordedOutcome", testTombstoneLateBegin},
			{"LateBeginAfterResend", testTombstoneLateBeginAfterResend},
			{"LateCreateOrGetCreatesNothing", testTombstoneLateCreateOrGet},
			{"FingerprintMismatch", testTombstoneFingerprint},
			{"GetAndEvents", testTombstoneGetAndEvents},
			{"NotListedNorDue", testTombstoneNotListed},
			{"Report", testTombstoneReport},
			{"Retention", testTombstoneRetention},
			{"RaceWithCleanup", testTombstoneRace},
			{"ContradictionReopensForReview", testReopenRefundFailedAfterCleanup},
			{"OnlyAContradictionReopens", testReopenOnlyOnContradiction},
			{"ReopenedOnce", testReopenConcurrent},
			{"ReopenedOnceAcrossStores", testReopenConcurrentTwoStores},
		}},
		{"Events", []testCase{
			{"NoneUntilRecorded", testEventsNone},
			{"StartAttemptAndFinish", testEventsStartAttemptAndFinish},
			{"FinishWithResolution", testEventsFinishWithResolution},
			{"Resolve", testEventsResolve},
			{"NotWrittenWhenCallFails", testEventsNotWrittenOnFailure},
			{"InvalidEventsRefused", testEventsInvalid},
			{"Limits", testEventsLimits},
			{"MissingOperation", testEventsMissing},
			{"DeletedByCleanup", testEventsCleanup},
			{"SeqUnderConcurrency", testEventsConcurrent},
			{"SeqUnderConcurrencyAcrossStores", testEventsConcurrentTwoStores},
			{"CorruptKind", testEventsCorrupt},
		}},
		{"Webhook", []testCase{
			{"DuplicateChangesNothing", testWebhookDedup},
			{"SettlesUnknown", testWebhookSettleUnknown},
			{"SettlesInFlight", testWebhookSettleInFlight},
			{"ProcessingNotedOrStale", testWebhookProcessing},
			{"ContradictsSucceeded", testWebhookContradictsSucceeded},
			{"ContradictsFailed", testWebhookContradictsFailed},
			{"SettlesReviewWantingLookups", testWebhookSettlesReview},
			{"NotesReviewWaitingForOperator", testWebhookNotesOperatorReview},
			{"LookupNudges", testWebhookLookupNudges},
			{"MatchesProviderRef", testWebhookMatchProviderRef},
			{"OneOperationOnce", testWebhookOneOperationOnce},
			{"MatchesPaymentRef", testWebhookMatchPaymentRef},
			{"IDOfAnotherKindFallsBackToRefs", testWebhookIDOfAnotherKind},
			{"AmbiguousSettlesNone", testWebhookAmbiguous},
			{"Unmatched", testWebhookUnmatched},
			{"Tombstone", testWebhookTombstone},
			{"AppliesToItsKeyGeneration", testWebhookGenerations},
			{"SecondObjectIsADuplicate", testWebhookSecondObject},
			{"StaleEarlierSuccessAfterItsFailure", testWebhookStaleEarlierSuccess},
			{"InvalidParams", testWebhookInvalid},
			{"InvalidFilter", testWebhookInvalidFilter},
			{"RecordedOnce", testWebhookConcurrent},
			{"RecordedOnceAcrossStores", testWebhookConcurrentTwoStores},
			{"ListFiltersAndOrder", testWebhookList},
			{"ListDefaultLimit", testWebhookListDefaultLimit},
			{"CleanupKeepsRedeliveryWindow", testWebhookCleanup},
			{"UnreadableRecordedOnce", testWebhookUnreadable},
			{"UnreadableInvalid", testWebhookUnreadableInvalid},
		}},
		{"Stats", []testCase{
			{"Empty", testStatsEmpty},
			{"CountsOldestAndReviews", testStatsCounts},
			{"TombstonesNotCounted", testStatsTombstones},
			{"ReadOnly", testStatsReadOnly},
			{"OneSnapshotBesideWriters", testStatsConcurrentWriters},
			{"CancelledContext", testStatsCancelled},
			{"Inbox", testStatsInbox},
		}},
		{"Findings", []testCase{
			{"RecordAndFindAgain", testFindingsRecordAndRefind},
			{"Ack", testFindingsAck},
			{"FiltersAndPaging", testFindingsFiltersAndPaging},
			{"DefaultLimit", testFindingsDefaultLimit},
			{"StatsCountsOpenOnes", testFindingsStats},
			{"KeptByCleanup", testFindingsKeptByCleanup},
			{"InvalidInput", testInvalidFindings},
		}},
		{"Feed", []testCase{
			{"Empty", testFeedEmpty},
			{"Transitions", testFeedTransitions},
			{"Paging", testFeedPaging},
			{"InvalidParams", testFeedInvalid},
			{"Cleanup", testFeedCleanup},
			{"OperationOrder", testFeedOperationOrder},
		}},
		{"Consumer", []testCase{
			{"ReplicasApplyEachEntryOnce", testConsumerReplicas},
			{"FinalPassOnShutdown", testConsumerFinalPass},
			{"HandlerErrorRollsBackPage", testConsumerHandlerError},
			{"InvalidInputs", testConsumerInvalid},
			{"Stats", testConsumerStats},
		}},
		{"Durability", []testCase{
			{"SurvivesReopen", testDurability},
		}},
		{"Corruption", []testCase{
			{"UnknownStatusIsErrCorrupt", testCorruption},
		}},
		{"InvalidInput", []testCase{
			{"Begin", testInvalidBegin},
			{"CreateOrGet", testInvalidCreateOrGet},
			{"Get", testInvalidGet},
			{"Claim", testInvalidClaim},
			{"StartAttempt", testInvalidStartAttempt},
			{"Finish", testInvalidFinish},
			{"ClaimDue", testInvalidClaimDue},
			{"List", testInvalidList},
			{"ListReview", testInvalidListReview},
			{"Resolve", testInvalidResolve},
			{"Cleanup", testInvalidCleanup},
		}},
	}
}
