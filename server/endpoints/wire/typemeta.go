package wire

import "bytes"

// AppendWithoutTypeMeta appends to dst a JSON object without its top-level kind and apiVersion
// members. The items of a built-in type's list carry neither in kube-apiserver's answers, while
// stored objects have both (a get returns them); cutting them out of the stored bytes keeps a list
// from decoding every item. The input is JSON this server encoded: compact, with unescaped keys.
func AppendWithoutTypeMeta(dst, obj []byte) []byte {
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
	depth := 0
	memberStart := open + 1
	for i := open + 1; i < end; i++ {
		switch obj[i] {
		case '"':
			i = closingQuote(obj[:end], i+1)
		case '{', '[':
			depth++
		case '}', ']':
			depth--
		case ',':
			if depth == 0 {
				emit(obj[memberStart:i])
				memberStart = i + 1
			}
		}
	}
	emit(obj[memberStart:end])
	return append(out, '}')
}

// closingQuote returns the index of the quote that ends the string whose content starts at from,
// or len(b) if none does. It jumps from quote to quote (most of an object's bytes are in its
// strings): a quote preceded by an odd number of backslashes is escaped.
func closingQuote(b []byte, from int) int {
	for i := from; ; i++ {
		q := bytes.IndexByte(b[i:], '"')
		if q < 0 {
			return len(b)
		}
		i += q
		backslashes := 0
		for j := i - 1; j >= from && b[j] == '\\'; j-- {
			backslashes++
		}
		if backslashes%2 == 0 {
			return i
		}
	}
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
