/// What a push's workers drive, whichever the server: each device pushed, then what is gathered
/// sent (`finish`), then what no set names collected. `DDMPusher` and `MDMPusher` are the two.
class Pusher: @unchecked Sendable {
    let source: PushSource
    let journal: PushJournal
    let connection: ServerConnection
    let tally: PushTally
    let options: PushOptions

    init(source: PushSource, journal: PushJournal, connection: ServerConnection, tally: PushTally, options: PushOptions) {
        self.source = source
        self.journal = journal
        self.connection = connection
        self.tally = tally
        self.options = options
    }

    /// Pushes one device; its failure goes to the tally.
    func push(_ device: PushSource.Device) async { preconditionFailure("a pusher pushes devices") }
    /// Sends the notifications (or pushes) still gathered.
    func finish() async {}
    /// Deletes what no set names any more (DDM).
    func collect(jobs: Int) async {}
}
