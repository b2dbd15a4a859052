/// Waits until `condition` holds, checking every 10 ms, for at most `limit`; returns whether it
/// held. Tests wait for a state this way instead of sleeping a fixed time that a busy machine
/// may not honour.
public func eventually(within limit: Duration = .seconds(5), _ condition: () -> Bool) async -> Bool {
    let end = ContinuousClock.now + limit
    while !condition() {
        guard ContinuousClock.now < end else { return false }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return true
}
