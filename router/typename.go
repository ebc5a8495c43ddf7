package router

import "strconv"

// typeName names a PostgreSQL type in error messages: users know "text",
// not OID 25. Types outside this list are shown by OID.
func typeName(oid uint32) string {
	name := map[uint32]string{
		16: "boolean", 17: "bytea", 18: "char", 19: "name", 20: "bigint", 21: "smallint", 23: "integer",
		25: "text", 26: "oid", 114: "json", 700: "real", 701: "double precision", 1042: "character",
		1043: "character varying", 1082: "date", 1083: "time", 1114: "timestamp", 1184: "timestamptz",
		1186: "interval", 1266: "timetz", 1700: "numeric", 2950: "uuid", 3802: "jsonb",
	}[oid]
	if name == "" {
		return "OID " + strconv.FormatUint(uint64(oid), 10)
	}
	return name + " (OID " + strconv.FormatUint(uint64(oid), 10) + ")"
}
