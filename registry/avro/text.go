package avro

// schemaText is Avro's Schema.toString(): compact JSON, a named type
// written in full the first time and by name after (Schema.toJson of each
// schema class, Name.writeName, NamedSchema.writeNameRef).
func schemaText(root *node) string {
	w := textWriter{known: map[string]bool{}}
	w.schema(root, "")
	return string(w.b)
}

type textWriter struct {
	b     []byte
	known map[string]bool
}

func (w *textWriter) schema(n *node, space string) {
	switch n.kind {
	case tUnion:
		w.b = append(w.b, '[')
		for i, b := range n.branches {
			if i > 0 {
				w.b = append(w.b, ',')
			}
			w.schema(b, space)
		}
		w.b = append(w.b, ']')
	case tRecord:
		w.record(n, space)
	case tArray:
		w.b = append(w.b, `{"type":"array","items":`...)
		w.schema(n.items, space)
		w.props(n.props)
		w.b = append(w.b, '}')
	case tMap:
		w.b = append(w.b, `{"type":"map","values":`...)
		w.schema(n.values, space)
		w.props(n.props)
		w.b = append(w.b, '}')
	default:
		if len(n.props) == 0 {
			w.b = appendJSONString(w.b, n.kind.String())
			return
		}
		w.b = append(w.b, `{"type":`...)
		w.b = appendJSONString(w.b, n.kind.String())
		w.props(n.props)
		w.b = append(w.b, '}')
	}
}

func (w *textWriter) record(n *node, space string) {
	full := n.fullName()
	if w.known[full] {
		if n.space == space && !isTypeName(n.name) {
			w.b = appendJSONString(w.b, n.name)
		} else {
			w.b = appendJSONString(w.b, full)
		}
		return
	}
	w.known[full] = true
	w.b = append(w.b, `{"type":"record","name":`...)
	w.b = appendJSONString(w.b, n.name)
	if n.space != space {
		w.b = append(w.b, `,"namespace":`...)
		w.b = appendJSONString(w.b, n.space) // "" for none inside a namespace
	}
	if n.doc != "" {
		w.b = append(w.b, `,"doc":`...)
		w.b = appendJSONString(w.b, n.doc)
	}
	w.b = append(w.b, `,"fields":[`...)
	for i, f := range n.fields {
		if i > 0 {
			w.b = append(w.b, ',')
		}
		w.b = append(w.b, `{"name":`...)
		w.b = appendJSONString(w.b, f.name)
		w.b = append(w.b, `,"type":`...)
		w.schema(f.typ, n.space)
		if f.doc != "" {
			w.b = append(w.b, `,"doc":`...)
			w.b = appendJSONString(w.b, f.doc)
		}
		if f.def != nil {
			w.b = append(w.b, `,"default":`...)
			w.b = append(w.b, f.def...)
		}
		w.props(f.props)
		w.b = append(w.b, '}')
	}
	w.b = append(w.b, ']')
	w.props(n.props)
	w.b = append(w.b, '}')
}

func (w *textWriter) props(props []prop) {
	for _, p := range props {
		w.b = append(w.b, ',')
		w.b = appendJSONString(w.b, p.key)
		w.b = append(w.b, ':')
		w.b = append(w.b, p.value...)
	}
}

// isTypeName is Name.shouldWriteFull's check: a name that is also an Avro
// type name is always written in full.
func isTypeName(name string) bool {
	switch name {
	case "null", "boolean", "int", "long", "float", "double", "bytes", "string",
		"array", "map", "record", "union", "enum", "fixed":
		return true
	}
	return false
}

// appendJSONString writes s as Jackson does: '"', '\\' and the control
// characters escaped, everything else as UTF-8.
func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789ABCDEF"
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c == '\n':
			dst = append(dst, '\\', 'n')
		case c == '\r':
			dst = append(dst, '\\', 'r')
		case c == '\t':
			dst = append(dst, '\\', 't')
		case c == '\b':
			dst = append(dst, '\\', 'b')
		case c == '\f':
			dst = append(dst, '\\', 'f')
		case c < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, '"')
}
