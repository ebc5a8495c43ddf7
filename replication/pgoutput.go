package replication

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/outboxrelay/outboxrelay/capture"
)

// This file decodes pgoutput protocol version 1 messages: the payload of one
// XLogData frame. It is pure and checks every length against the bytes that
// remain, because a decoder that indexes past the end of a short frame (as
// pglogrepl's Parse does for, among others, a truncated TupleData, Relation
// column list or Truncate OID list) turns one bad frame into a crash of the
// whole relay instead of an error that names the frame.

// MessageType is the first byte of a pgoutput message.
type MessageType byte

// The pgoutput message types of protocol version 1. The streaming and
// two-phase types of later versions are reported as unsupported: outboxrelay
// asks for proto_version '1', so the server never sends them.
const (
	MessageBegin    MessageType = 'B'
	MessageCommit   MessageType = 'C'
	MessageOrigin   MessageType = 'O'
	MessageRelation MessageType = 'R'
	MessageDataType MessageType = 'Y' // the protocol's "Type" message
	MessageInsert   MessageType = 'I'
	MessageUpdate   MessageType = 'U'
	MessageDelete   MessageType = 'D'
	MessageTruncate MessageType = 'T'
	MessageLogical  MessageType = 'M'
)

// String returns the protocol documentation's name for the type, so errors
// read like the PostgreSQL manual.
func (t MessageType) String() string {
	switch t {
	case MessageBegin:
		return "Begin"
	case MessageCommit:
		return "Commit"
	case MessageOrigin:
		return "Origin"
	case MessageRelation:
		return "Relation"
	case MessageDataType:
		return "Type"
	case MessageInsert:
		return "Insert"
	case MessageUpdate:
		return "Update"
	case MessageDelete:
		return "Delete"
	case MessageTruncate:
		return "Truncate"
	case MessageLogical:
		return "Message"
	default:
		return fmt.Sprintf("unknown message %q", byte(t))
	}
}

// Kinds of one column value in TupleData.
const (
	ColumnNull      byte = 'n' // SQL NULL: Data is nil.
	ColumnUnchanged byte = 'u' // an unchanged TOASTed value that the server did not send: Data is nil.
	ColumnText      byte = 't' // Data holds the value in text format.
	ColumnBinary    byte = 'b' // Data holds the value in binary format.
)

// Kinds of the old tuple in Update and Delete messages.
const (
	OldTupleNone byte = 0   // the message carries no old tuple.
	OldTupleKey  byte = 'K' // the old tuple holds only the replica identity columns.
	OldTupleFull byte = 'O' // the old tuple holds every column (REPLICA IDENTITY FULL).
)

// Column is one value of a decoded tuple. Data is a sub-slice of the frame
// that was decoded: it is valid only until the caller reuses or releases
// that frame buffer, so copy it if it must outlive the frame.
type Column struct {
	Kind byte
	Data []byte
}

// Tuple is a decoded TupleData. Columns is reused by the next Decode into
// the same Message, so neither the slice nor the Data in it may be kept.
type Tuple struct {
	Columns []Column
}

// Begin starts a transaction. FinalLSN is the LSN of the transaction's
// commit record: the same value as the CommitLSN of its Commit message.
type Begin struct {
	FinalLSN   capture.LSN
	CommitTime time.Time
	Xid        uint32
}

// Commit ends a transaction. CommitLSN is where the commit record starts,
// EndLSN where it ends; see Checkpoint for which one is confirmed.
type Commit struct {
	Flags      uint8
	CommitLSN  capture.LSN
	EndLSN     capture.LSN
	CommitTime time.Time
}

// Origin names the replication origin of the transaction being sent.
type Origin struct {
	CommitLSN capture.LSN
	Name      string
}

// RelationMessage describes a table before the first change of it in a
// session and again after its definition changed. Columns is freshly
// allocated on each decode, so it may be kept (the relation cache keeps it).
type RelationMessage struct {
	ID              uint32
	Namespace       string
	Name            string
	ReplicaIdentity byte
	Columns         []RelationColumn
}

// RelationColumn is one column of a RelationMessage. Generated columns are
// not sent by pgoutput, so positions match TupleData positions, not attnums.
type RelationColumn struct {
	Key          bool // part of the replica identity
	Name         string
	TypeOID      uint32
	TypeModifier int32
}

// TypeMessage describes a non-builtin data type used by a later column.
type TypeMessage struct {
	OID       uint32
	Namespace string
	Name      string
}

// Insert is a new row.
type Insert struct {
	RelationID uint32
	New        Tuple
}

// Update is a changed row. OldKind is OldTupleNone, OldTupleKey or
// OldTupleFull; Old is meaningful only when OldKind is not OldTupleNone.
type Update struct {
	RelationID uint32
	OldKind    byte
	Old        Tuple
	New        Tuple
}

// Delete is a removed row; OldKind is OldTupleKey or OldTupleFull.
type Delete struct {
	RelationID uint32
	OldKind    byte
	Old        Tuple
}

// Truncate options, as the protocol defines them.
const (
	TruncateCascade         uint8 = 1
	TruncateRestartIdentity uint8 = 2
)

// Truncate empties one or more tables. RelationIDs is reused by the next
// Decode into the same Message.
type Truncate struct {
	Options     uint8
	RelationIDs []uint32
}

// LogicalMessage is a pg_logical_emit_message record. Content is a
// sub-slice of the frame, valid only as long as the frame is. Protocol
// version 1 without streaming carries no xid field, unlike version 2.
type LogicalMessage struct {
	Transactional bool
	LSN           capture.LSN
	Prefix        string
	Content       []byte
}

// Message receives one decoded frame. Only the field named by Type is set
// by a Decode; the others keep whatever an earlier Decode left there, which
// is what lets one Message be reused for every frame without allocating.
//
// Everything that points into the frame (Column.Data, LogicalMessage.Content)
// and every reused slice (Tuple.Columns, Truncate.RelationIDs) is valid only
// until the next Decode into the same Message or until the frame buffer is
// reused, whichever comes first.
type Message struct {
	Type     MessageType
	Begin    Begin
	Commit   Commit
	Origin   Origin
	Relation RelationMessage
	DataType TypeMessage
	Insert   Insert
	Update   Update
	Delete   Delete
	Truncate Truncate
	Logical  LogicalMessage
}

// DecodeError says which message and which byte of the frame could not be
// decoded. Offset counts from the start of the frame, the type byte being
// offset 0. Column is the 0-based tuple column, or -1 when the field is not
// part of a tuple.
type DecodeError struct {
	Type   MessageType
	Field  string
	Column int
	Offset int
	Reason string
}

func (e *DecodeError) Error() string {
	if e.Field == "" {
		return "pgoutput: " + e.Reason
	}
	if e.Column >= 0 {
		return fmt.Sprintf("pgoutput: %s: %s column %d at offset %d: %s", e.Type, e.Field, e.Column, e.Offset, e.Reason)
	}
	return fmt.Sprintf("pgoutput: %s: %s at offset %d: %s", e.Type, e.Field, e.Offset, e.Reason)
}

// Decode decodes one pgoutput protocol version 1 message (the WALData of an
// XLogData frame) into m, reusing m's slices. It never panics: a short,
// over-long or malformed frame returns a *DecodeError. See Message for how
// long the decoded values stay valid. After an error the fields of m for
// that message type hold partial values and must not be used.
func Decode(frame []byte, m *Message) error {
	if len(frame) == 0 {
		return &DecodeError{Column: -1, Reason: "empty frame"}
	}
	r := reader{frame: frame, off: 1, typ: MessageType(frame[0])}
	m.Type = r.typ
	switch r.typ {
	case MessageBegin:
		decodeBegin(&r, &m.Begin)
	case MessageCommit:
		decodeCommit(&r, &m.Commit)
	case MessageOrigin:
		m.Origin.CommitLSN = r.lsn("commit LSN")
		m.Origin.Name = r.cstring("name")
	case MessageRelation:
		decodeRelation(&r, &m.Relation)
	case MessageDataType:
		m.DataType.OID = r.uint32("type OID")
		m.DataType.Namespace = r.cstring("namespace")
		m.DataType.Name = r.cstring("name")
	case MessageInsert:
		m.Insert.RelationID = r.uint32("relation OID")
		r.expect('N', "new tuple marker")
		r.tuple(&m.Insert.New, "new tuple", "new tuple column count")
	case MessageUpdate:
		decodeUpdate(&r, &m.Update)
	case MessageDelete:
		decodeDelete(&r, &m.Delete)
	case MessageTruncate:
		decodeTruncate(&r, &m.Truncate)
	case MessageLogical:
		decodeLogical(&r, &m.Logical)
	default:
		return &DecodeError{Type: r.typ, Field: "type byte", Column: -1,
			Reason: "unsupported (outboxrelay requests pgoutput proto_version 1 without streaming)"}
	}
	r.end()
	if r.err != nil {
		return r.err
	}
	return nil
}

func decodeBegin(r *reader, b *Begin) {
	b.FinalLSN = r.lsn("final LSN")
	b.CommitTime = r.timestamp("commit timestamp")
	b.Xid = r.uint32("xid")
}

func decodeCommit(r *reader, c *Commit) {
	c.Flags = r.uint8("flags")
	c.CommitLSN = r.lsn("commit LSN")
	c.EndLSN = r.lsn("end LSN")
	c.CommitTime = r.timestamp("commit timestamp")
}

func decodeRelation(r *reader, rel *RelationMessage) {
	rel.ID = r.uint32("relation OID")
	rel.Namespace = r.cstring("namespace")
	rel.Name = r.cstring("relation name")
	rel.ReplicaIdentity = r.uint8("replica identity")
	n := r.count("column count", 1+1+4+4) // flags, name terminator, type OID, typmod
	if r.err != nil {
		return
	}
	cols := make([]RelationColumn, n)
	for i := range cols {
		cols[i].Key = r.uint8("column flags")&1 == 1
		cols[i].Name = r.cstring("column name")
		cols[i].TypeOID = r.uint32("column type OID")
		cols[i].TypeModifier = int32(r.uint32("column type modifier"))
		if r.err != nil {
			return
		}
	}
	rel.Columns = cols
}

func decodeUpdate(r *reader, u *Update) {
	u.RelationID = r.uint32("relation OID")
	u.OldKind = OldTupleNone
	switch kind := r.peek("tuple marker"); kind {
	case OldTupleKey, OldTupleFull:
		r.off++
		u.OldKind = kind
		r.tuple(&u.Old, "old tuple", "old tuple column count")
	}
	r.expect('N', "new tuple marker")
	r.tuple(&u.New, "new tuple", "new tuple column count")
}

func decodeDelete(r *reader, d *Delete) {
	d.RelationID = r.uint32("relation OID")
	start := r.off
	kind := r.uint8("old tuple marker")
	if r.err == nil && kind != OldTupleKey && kind != OldTupleFull {
		r.fail("old tuple marker", -1, start, fmt.Sprintf("got %q, want 'K' or 'O'", kind))
		return
	}
	d.OldKind = kind
	r.tuple(&d.Old, "old tuple", "old tuple column count")
}

func decodeTruncate(r *reader, t *Truncate) {
	n := r.count32("relation count", 4)
	t.Options = r.uint8("options")
	if r.err != nil {
		return
	}
	t.RelationIDs = t.RelationIDs[:0]
	for range n {
		t.RelationIDs = append(t.RelationIDs, r.uint32("relation OID"))
	}
}

func decodeLogical(r *reader, l *LogicalMessage) {
	l.Transactional = r.uint8("flags")&1 == 1
	l.LSN = r.lsn("message LSN")
	l.Prefix = r.cstring("prefix")
	lengthOff := r.off
	n := r.length("content length")
	l.Content = r.bytes(n, "content", -1, lengthOff)
}

// reader walks a frame. The first failure is kept in err and turns every
// later read into a no-op returning zero values, so decoders read straight
// through and check once; loops stop early on r.err where they would
// otherwise spin on a count that no longer means anything.
type reader struct {
	frame []byte
	off   int
	typ   MessageType
	err   *DecodeError
}

func (r *reader) fail(field string, column, offset int, reason string) {
	if r.err == nil {
		r.err = &DecodeError{Type: r.typ, Field: field, Column: column, Offset: offset, Reason: reason}
	}
}

func (r *reader) remaining() int { return len(r.frame) - r.off }

// take returns the next n bytes, or nil after recording why they are not there.
func (r *reader) take(n int, field string, column int) []byte {
	if r.err != nil {
		return nil
	}
	if n > r.remaining() {
		r.fail(field, column, r.off, fmt.Sprintf("needs %d bytes, %d remain", n, r.remaining()))
		return nil
	}
	b := r.frame[r.off : r.off+n : r.off+n]
	r.off += n
	return b
}

func (r *reader) uint8(field string) uint8 {
	if b := r.take(1, field, -1); b != nil {
		return b[0]
	}
	return 0
}

func (r *reader) peek(field string) byte {
	if r.err == nil && r.remaining() < 1 {
		r.fail(field, -1, r.off, "needs 1 byte, 0 remain")
	}
	if r.err != nil {
		return 0
	}
	return r.frame[r.off]
}

func (r *reader) uint16(field string) uint16 {
	if b := r.take(2, field, -1); b != nil {
		return binary.BigEndian.Uint16(b)
	}
	return 0
}

func (r *reader) uint32(field string) uint32 {
	if b := r.take(4, field, -1); b != nil {
		return binary.BigEndian.Uint32(b)
	}
	return 0
}

func (r *reader) uint64(field string) uint64 {
	if b := r.take(8, field, -1); b != nil {
		return binary.BigEndian.Uint64(b)
	}
	return 0
}

func (r *reader) lsn(field string) capture.LSN { return capture.LSN(r.uint64(field)) }

// postgresEpochMicros is 2000-01-01 00:00:00 UTC in Unix microseconds: the
// epoch of PostgreSQL's TimestampTz.
const postgresEpochMicros = 946_684_800_000_000

func (r *reader) timestamp(field string) time.Time {
	us := int64(r.uint64(field))
	if r.err != nil {
		return time.Time{}
	}
	return time.UnixMicro(us + postgresEpochMicros).UTC()
}

// cstring reads a NUL-terminated string. The copy into a Go string is
// deliberate: these strings (names, prefixes) outlive the frame in caches.
func (r *reader) cstring(field string) string {
	if r.err != nil {
		return ""
	}
	for i := r.off; i < len(r.frame); i++ {
		if r.frame[i] == 0 {
			s := string(r.frame[r.off:i])
			r.off = i + 1
			return s
		}
	}
	r.fail(field, -1, r.off, fmt.Sprintf("no NUL terminator in the %d remaining bytes", r.remaining()))
	return ""
}

// length reads an Int32 byte count and rejects a negative one before it
// can reach a slice expression.
func (r *reader) length(field string) int {
	start := r.off
	n := int32(r.uint32(field))
	if r.err == nil && n < 0 {
		r.fail(field, -1, start, fmt.Sprintf("negative length %d", n))
	}
	if r.err != nil {
		return 0
	}
	return int(n)
}

// bytes returns the next n bytes, n having been read from a length field at
// lengthOff; the error points at that field, since it is what is wrong.
func (r *reader) bytes(n int, field string, column, lengthOff int) []byte {
	if r.err == nil && n > r.remaining() {
		r.fail(field, column, lengthOff, fmt.Sprintf("length %d exceeds remaining %d bytes", n, r.remaining()))
	}
	return r.take(n, field, column)
}

// count reads an Int16 element count and checks that the frame could hold
// that many elements of at least minSize bytes, so a forged count cannot
// make the decoder allocate more than the frame's own size.
func (r *reader) count(field string, minSize int) int {
	start := r.off
	return r.checkCount(int64(r.uint16(field)), field, start, minSize)
}

// count32 is count for an Int32 element count.
func (r *reader) count32(field string, minSize int) int {
	start := r.off
	n := int64(int32(r.uint32(field)))
	if r.err == nil && n < 0 {
		r.fail(field, -1, start, fmt.Sprintf("negative count %d", n))
	}
	return r.checkCount(n, field, start, minSize)
}

// checkCount works in int64 so that a forged Int32 count times the element
// size cannot overflow on any platform before it is compared.
func (r *reader) checkCount(n int64, field string, start, minSize int) int {
	if r.err != nil {
		return 0
	}
	if need := n * int64(minSize); need > int64(r.remaining()) {
		r.fail(field, -1, start, fmt.Sprintf("count %d needs at least %d bytes, %d remain", n, need, r.remaining()))
		return 0
	}
	return int(n)
}

func (r *reader) expect(want byte, field string) {
	start := r.off
	got := r.uint8(field)
	if r.err == nil && got != want {
		r.fail(field, -1, start, fmt.Sprintf("got %q, want %q", got, want))
	}
}

// end rejects bytes after a complete message: protocol version 1 messages
// have no optional trailer, so extra bytes mean the frame is not what we
// think it is (for example a version 2 message with an xid prefix).
func (r *reader) end() {
	if r.err == nil && r.remaining() != 0 {
		r.fail("end of message", -1, r.off, fmt.Sprintf("%d unexpected trailing bytes", r.remaining()))
	}
}

// tuple decodes TupleData into t, reusing t.Columns. It allocates only when
// the reused slice is too short, i.e. not at all once warmed up on a table.
// countField is spelled out by callers because building it here would
// allocate on every frame.
func (r *reader) tuple(t *Tuple, field, countField string) {
	n := r.count(countField, 1) // every column has at least its kind byte
	if r.err != nil {
		t.Columns = t.Columns[:0]
		return
	}
	if cap(t.Columns) < n {
		t.Columns = make([]Column, n)
	}
	t.Columns = t.Columns[:n]
	for i := range t.Columns {
		t.Columns[i] = r.column(field, i)
		if r.err != nil {
			t.Columns = t.Columns[:0]
			return
		}
	}
}

func (r *reader) column(field string, i int) Column {
	start := r.off
	if r.remaining() < 1 {
		r.fail(field, i, start, "needs 1 byte for the value kind, 0 remain")
		return Column{}
	}
	kind := r.frame[r.off]
	r.off++
	switch kind {
	case ColumnNull, ColumnUnchanged:
		return Column{Kind: kind}
	case ColumnText, ColumnBinary:
		if r.remaining() < 4 {
			r.fail(field, i, r.off, fmt.Sprintf("length needs 4 bytes, %d remain", r.remaining()))
			return Column{}
		}
		n := int32(binary.BigEndian.Uint32(r.frame[r.off:]))
		if n < 0 {
			r.fail(field, i, r.off, fmt.Sprintf("negative length %d", n))
			return Column{}
		}
		r.off += 4
		return Column{Kind: kind, Data: r.bytes(int(n), field, i, start+1)}
	default:
		r.fail(field, i, start, fmt.Sprintf("unknown value kind %q (want 'n', 'u', 't' or 'b')", kind))
		return Column{}
	}
}
