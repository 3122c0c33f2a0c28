import AppConfigCore
import AppConfigOutput
import AppConfigSources
import Foundation

extension RenderJob {
    /// Where this run saves its inventory's image (`InventoryImage`: the rows it read, with the
    /// file's records) and where it looks for last night's: beside its output (`FILE.tar.inventory`,
    /// `OUT.inventory`), then beside `--since`, as for the directory's (`directoryImagePlaces`).
    var inventoryImagePlaces: (save: String?, read: [String]) { imagePlaces(suffix: ".inventory") }
}

/// What a run did with inventory images: read its rows from one (only the records with new bytes
/// parsed), and where it saves tonight's once it has published.
struct InventoryImageUse {
    var saveTo: String?
    var incremental: RunSummary.InventoryIncremental?

    init(saveTo: String? = nil, inventory: InventoryTable? = nil) {
        self.saveTo = saveTo
        incremental = inventory?.incremental.map { .init(image: $0.image, records: $0.records, recordsRead: $0.recordsRead, rowsRead: $0.rowsRead) }
    }

    /// Writes the table's image under a temporary name beside the output on a thread of its own,
    /// while the run publishes (as the directory's: `DirectoryImageUse.startSaving`). Nil when
    /// there is no place or the table kept no records.
    func startSaving(_ inventory: InventoryTable) -> WorkBeside<AtomicFile?, Never>? {
        guard let path = saveTo, inventory.recordHashes != nil else { return nil }
        return WorkBeside { () -> AtomicFile? in
            writeImage(to: path) { write throws(Problem) in try InventoryImage.withPieces(of: inventory, write) }
        }
    }

    /// Once the run has published: the image under its name (a shortcut for the next run, not an
    /// output: one that cannot be saved costs that run a whole read). A run that published
    /// nothing saves nothing.
    func finish(_ saving: WorkBeside<AtomicFile?, Never>?, published: Bool) {
        let written = saving?.value() ?? nil
        if published { try? written?.commit() } else { written?.discard() }
    }
}
