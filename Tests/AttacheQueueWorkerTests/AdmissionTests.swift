import Attache
import AttacheOperations
import AttacheTenants
import Testing

/// The one admission the service, the relay and the worker make: the tenant's slot is taken when
/// a payload is let in and given back once, however the door ends it.
@Suite struct AdmissionTests {
    func gate(concurrency: Int) throws -> (AdmissionGate, Tenant, Tenants) {
        let tenant = Tenant(name: "acme", tokenHashes: [], concurrency: concurrency)
        let tenants = try Tenants([tenant], makeScope: { _ in .unscoped })
        return (AdmissionGate(tenants: tenants, policy: .service, metrics: EnrichmentMetrics(), door: "service"), tenant, tenants)
    }

    @Test func theSlotIsGivenBackOnceWhateverEndsIt() throws {
        let (gate, tenant, tenants) = try gate(concurrency: 1)
        guard case .admitted(let first) = gate.admit(tenant) else { Issue.record("not admitted"); return }
        #expect(tenants.inFlight("acme") == 1)
        guard case .refused(_, let refusal) = gate.admit(tenant) else { Issue.record("a second one let in"); return }
        #expect(refusal.kind == .concurrency)
        // Finished with its emission, then left again by the door's own defer: one slot back.
        let emission = Emission(bytes: [], report: EnrichReport(outcome: .passthrough, reason: .notMutable, elapsedMs: 0, deadlineMs: 0,
                                                                payloadBytes: 0, attachments: []))
        first.finish(emission)
        first.leave()
        #expect(tenants.inFlight("acme") == 0)
        guard case .admitted(let second) = gate.admit(tenant) else { Issue.record("the slot was not given back"); return }
        #expect(tenants.inFlight("acme") == 1)
        second.leave()
        second.leave()
        #expect(tenants.inFlight("acme") == 0)
    }

    /// A door that forgets its admission (an error path with no leave) still gives the slot back.
    @Test func aForgottenAdmissionGivesItsSlotBack() throws {
        let (gate, tenant, tenants) = try gate(concurrency: 1)
        do {
            let decision = gate.admit(tenant)
            guard case .admitted = decision else { Issue.record("not admitted"); return }
            #expect(tenants.inFlight("acme") == 1)
        }
        #expect(tenants.inFlight("acme") == 0)
    }
}
