package server

import "bytes"

// appendWithoutTypeMeta appends to dst a JSON object without its top-level kind and apiVersion
// members. The items of a built-in type's list carry neither in kube-apiserver's answers, while
// stored objects have both (a get returns them); cutting them out of the stored bytes keeps a list
// from decoding every item. The input is JSON this server encoded: compact, with unescaped keys.
func appendWithoutTypeMeta(dst, obj []byte) []byte {
	open, end := bytes.IndexByte(obj, '{'), bytes.LastIndexByte(obj, '}')
	if open < 0 || end < open {
		return append(dst, obj...)
	}
	out := append(dst, '{')
	first := len(out)
	emit := func(member []byte) {
		if len(bytes.TrimSpace(member)) == 0 || isTypeMetaMember(member) {
			return
		}
		if len(out) > first {
			out = append(out, ',')
		}
		out = append(out, member...)
	}
	depth, inString, escaped := 0, false, false
	memberStart := open + 1
	for i := open + 1; i < end; i++ {
		c := obj[i]
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			depth--
		case c == ',' && depth == 0:
			emit(obj[memberStart:i])
			memberStart = i + 1
		}
	}
	emit(obj[memberStart:end])
	return append(out, '}')
}

var typeMetaKeys = [][]byte{[]byte(`"kind"`), []byte(`"apiVersion"`)}

// isTypeMetaMember reports whether one `"key":value` member is kind or apiVersion.
func isTypeMetaMember(member []byte) bool {
	member = bytes.TrimLeft(member, " \t\r\n")
	for _, key := range typeMetaKeys {
		if rest, ok := bytes.CutPrefix(member, key); ok {
			if rest = bytes.TrimLeft(rest, " \t\r\n"); len(rest) > 0 && rest[0] == ':' {
				return true
			}
		}
	}
	return false
}
