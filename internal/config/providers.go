package config

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// resolver expands Kafka config provider references, ${env:NAME} and
// ${file:path:key}. Kafka Connect needs config.providers in the worker to
// enable them; outboxrelay always has both. Other ${…} text, such as the
// EventRouter's ${routedByValue}, is left alone: only these two providers
// are references.
type resolver struct {
	env   func(string) (string, bool)
	files map[string]map[string]string // parsed properties files, by path
}

func newResolver(env func(string) (string, bool)) *resolver {
	return &resolver{env: env, files: map[string]map[string]string{}}
}

// resolve expands every provider reference in v. Errors name the reference,
// never the value it resolves to.
func (r *resolver) resolve(v string) (string, error) {
	if !strings.Contains(v, "${") {
		return v, nil
	}
	var b strings.Builder
	rest := v
	for {
		start := strings.Index(rest, "${")
		if start < 0 {
			b.WriteString(rest)
			return b.String(), nil
		}
		b.WriteString(rest[:start])
		body := rest[start+2:]
		provider, _, isRef := strings.Cut(body, ":")
		if !isRef || (provider != "env" && provider != "file") {
			// Not ours: keep "${" and go on after it.
			b.WriteString("${")
			rest = body
			continue
		}
		end := strings.IndexByte(body, '}')
		if end < 0 {
			return "", fmt.Errorf("${%s: is not closed by }; write ${env:NAME} or ${file:/path/to/file.properties:key}", provider)
		}
		ref := body[:end]
		val, err := r.lookup(ref)
		if err != nil {
			return "", fmt.Errorf("${%s}: %w", ref, err)
		}
		b.WriteString(val)
		rest = body[end+1:]
	}
}

// lookup resolves one reference body, "env:NAME" or "file:path:key".
func (r *resolver) lookup(ref string) (string, error) {
	provider, arg, _ := strings.Cut(ref, ":")
	if provider == "env" {
		name := arg
		if name == "" {
			return "", errors.New("names no variable; write ${env:NAME}")
		}
		v, ok := r.env(name)
		if !ok {
			return "", fmt.Errorf("environment variable %s is not set", name)
		}
		return v, nil
	}
	// Kafka's pattern ${provider:[path:]key} splits at the first colon after
	// the provider, so the key may hold colons and the path may not.
	path, key, ok := strings.Cut(arg, ":")
	if !ok || path == "" || key == "" {
		return "", errors.New("needs a path and a key; write ${file:/path/to/file.properties:key}")
	}
	props, err := r.file(path)
	if err != nil {
		return "", err
	}
	v, ok := props[key]
	if !ok {
		return "", fmt.Errorf("key %q is not in %s", key, path)
	}
	return v, nil
}

// file returns the parsed properties file at path, reading it once per Parse.
func (r *resolver) file(path string) (map[string]string, error) {
	if props, ok := r.files[path]; ok {
		return props, nil
	}
	// ReadFile checks before opening: opening a FIFO or a device could
	// block for ever, and reading one could fill memory.
	data, err := ReadFile(path, MaxPropertiesFileSize, "a ${file:} properties file")
	if err != nil {
		return nil, err
	}
	props, err := parseProperties(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	r.files[path] = props
	return props, nil
}

// parseProperties reads a Java .properties file as java.util.Properties.load
// does, which is what Kafka's FileConfigProvider uses: "key=value",
// "key: value" or "key value"; # and ! start comment lines; whitespace
// around the separator and at the start of a line is dropped, while
// trailing whitespace belongs to the value, as in Java, so both tools read
// the same secret; a trailing backslash continues the line; backslash
// escapes \t \n \r \f \uXXXX and \<any> (for \= \: \# \\ and spaces in keys).
// Later keys win. Errors give line numbers, never line content.
func parseProperties(data []byte) (map[string]string, error) {
	props := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), MaxPropertiesFileSize+1)
	lineNo := 0
	for sc.Scan() {
		lineNo++
		line := strings.TrimLeft(strings.TrimSuffix(sc.Text(), "\r"), " \t\f")
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		first := lineNo
		for continues(line) && sc.Scan() {
			lineNo++
			next := strings.TrimLeft(strings.TrimSuffix(sc.Text(), "\r"), " \t\f")
			line = line[:len(line)-1] + next
		}
		if continues(line) { // a continuation at the end of the file
			line = line[:len(line)-1]
		}
		key, value, err := splitProperty(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", first, err)
		}
		props[key] = value
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return props, nil
}

// continues reports whether line ends in an odd number of backslashes.
func continues(line string) bool {
	n := 0
	for i := len(line) - 1; i >= 0 && line[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

// splitProperty splits one logical line into its unescaped key and value.
func splitProperty(line string) (string, string, error) {
	end := len(line)
	for i := 0; i < len(line); i++ {
		if line[i] == '\\' {
			i++ // the escaped character belongs to the key
			continue
		}
		if c := line[i]; c == '=' || c == ':' || c == ' ' || c == '\t' || c == '\f' {
			end = i
			break
		}
	}
	rawKey, rest := line[:end], line[end:]
	rest = strings.TrimLeft(rest, " \t\f")
	if rest != "" && (rest[0] == '=' || rest[0] == ':') {
		rest = strings.TrimLeft(rest[1:], " \t\f")
	}
	key, err := unescape(rawKey)
	if err != nil {
		return "", "", err
	}
	value, err := unescape(rest)
	if err != nil {
		return "", "", err
	}
	return key, value, nil
}

func unescape(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		i++
		switch s[i] {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			if i+5 > len(s) {
				return "", errors.New(`malformed \uXXXX escape`)
			}
			n, err := strconv.ParseUint(s[i+1:i+5], 16, 16)
			if err != nil {
				return "", errors.New(`malformed \uXXXX escape`)
			}
			b.WriteRune(rune(n))
			i += 4
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String(), nil
}
