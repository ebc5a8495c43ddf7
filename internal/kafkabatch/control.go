package kafkabatch

import (
	"encoding/binary"
	"fmt"
)

// Control record types (ControlRecordType), in a control record's key.
const (
	ControlAbort  = 0
	ControlCommit = 1
)

// EndTxnMarker is the control record the transaction coordinator writes to
// every partition of a transaction when it ends (EndTransactionMarker).
type EndTxnMarker struct {
	Commit           bool // false: abort
	CoordinatorEpoch int32
}

// ParseEndTxnMarker reads the marker in r, a record of a control batch.
// Key: version int16 (0), type int16. Value: version int16 (0),
// coordinator epoch int32.
func ParseEndTxnMarker(r Record) (EndTxnMarker, error) {
	if len(r.Key) < 4 {
		return EndTxnMarker{}, fmt.Errorf("kafkabatch: control record key of %d bytes, want 4", len(r.Key))
	}
	if v := int16(binary.BigEndian.Uint16(r.Key)); v != 0 {
		return EndTxnMarker{}, fmt.Errorf("kafkabatch: control record key version %d, only 0 is known", v)
	}
	var m EndTxnMarker
	switch t := int16(binary.BigEndian.Uint16(r.Key[2:])); t {
	case ControlAbort:
	case ControlCommit:
		m.Commit = true
	default:
		return EndTxnMarker{}, fmt.Errorf("kafkabatch: control record type %d is not a transaction marker", t)
	}
	if len(r.Value) < 6 {
		return EndTxnMarker{}, fmt.Errorf("kafkabatch: transaction marker value of %d bytes, want 6", len(r.Value))
	}
	if v := int16(binary.BigEndian.Uint16(r.Value)); v != 0 {
		return EndTxnMarker{}, fmt.Errorf("kafkabatch: transaction marker version %d, only 0 is known", v)
	}
	m.CoordinatorEpoch = int32(binary.BigEndian.Uint32(r.Value[2:]))
	return m, nil
}
