/// Makes a device's output file from its rendered configuration, for deliveries that wrap it (an
/// MDM command). Called from the worker that rendered the device; appends straight into `out`.
public protocol DeviceFileEncoder: Sendable {
    func encode(key: UnsafeBufferPointer<UInt8>, plist: UnsafeRawBufferPointer, into out: inout [UInt8])
    /// What removes the configuration of a device gone from the fleet, where the delivery has it.
    func removal(key: UnsafeBufferPointer<UInt8>) -> [UInt8]?
}
