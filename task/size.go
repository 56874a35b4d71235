package task

// MaxPacketSize is ZooKeeper's default jute.maxbuffer (0xfffff): a server
// closes the connection of a client that sends a longer request, which the
// client would see as connection loss, and a retry would see again. Both
// Conn implementations refuse a request whose size on the wire is over it
// with ErrDataTooLarge before sending it. Data of MaxDataSize is always over
// it once the path, ACL and headers are counted (see MaxDataSize).
const MaxPacketSize = 0xfffff
