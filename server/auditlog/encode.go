// Package auditlog writes audit events as kube-apiserver's log backend does in its json format
// (--audit-log-format json): one audit.k8s.io/v1 Event per line, byte for byte the same. It is
// cheaper: an event without request or response objects (every event below level Request) is
// written by hand into a reused buffer, without the scheme's conversion and encoding/json's
// reflection, which were most of what auditing cost a request (docs/benchmarks.md). Other events
// go through kube's codec.
package auditlog

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"unicode/utf8"

	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// eventHead is how every line begins: the TypeMeta kube's codec sets on the v1 event.
var eventHead = `{"kind":"Event","apiVersion":"` + auditv1.SchemeGroupVersion.String() + `"`

// appendEvent appends ev as one JSON line, as kube's json log format writes it. It reports false,
// having appended nothing, for an event it leaves to kube's codec: one carrying a request or
// response object, or an object the codec would set kind or apiVersion of.
func appendEvent(b []byte, ev *auditinternal.Event) ([]byte, bool) {
	if ev.RequestObject != nil || ev.ResponseObject != nil || ev.TypeMeta != (metav1.TypeMeta{}) {
		return b, false
	}
	b = append(b, eventHead...)
	b = appendField(b, "level", string(ev.Level))
	b = appendField(b, "auditID", string(ev.AuditID))
	b = appendField(b, "stage", string(ev.Stage))
	b = appendField(b, "requestURI", ev.RequestURI)
	b = appendField(b, "verb", ev.Verb)
	b = appendUser(append(b, `,"user":`...), &ev.User)
	if ev.ImpersonatedUser != nil {
		b = appendUser(append(b, `,"impersonatedUser":`...), ev.ImpersonatedUser)
	}
	if m := ev.AuthenticationMetadata; m != nil {
		var start int
		b, start = openObject(append(b, `,"authenticationMetadata":`...))
		b = closeObject(appendOptionalFields(b, "impersonationConstraint", m.ImpersonationConstraint), start)
	}
	b = appendStrings(b, "sourceIPs", ev.SourceIPs)
	b = appendOptionalField(b, "userAgent", ev.UserAgent)
	if r := ev.ObjectRef; r != nil {
		var start int
		b, start = openObject(append(b, `,"objectRef":`...))
		b = appendOptionalFields(b, "resource", r.Resource, "namespace", r.Namespace, "name", r.Name,
			"uid", string(r.UID), "apiGroup", r.APIGroup, "apiVersion", r.APIVersion,
			"resourceVersion", r.ResourceVersion, "subresource", r.Subresource)
		b = closeObject(b, start)
	}
	if ev.ResponseStatus != nil {
		b = appendStatus(append(b, `,"responseStatus":`...), ev.ResponseStatus)
	}
	b = appendTime(append(b, `,"requestReceivedTimestamp":`...), ev.RequestReceivedTimestamp)
	b = appendTime(append(b, `,"stageTimestamp":`...), ev.StageTimestamp)
	if len(ev.Annotations) > 0 {
		b = appendStringMap(append(b, `,"annotations":`...), ev.Annotations)
	}
	return append(b, "}\n"...), true
}

func appendUser(b []byte, u *authnv1.UserInfo) []byte {
	b, start := openObject(b)
	b = appendOptionalFields(b, "username", u.Username, "uid", u.UID)
	b = appendStrings(b, "groups", u.Groups)
	if len(u.Extra) > 0 {
		b = append(b, `,"extra":{`...)
		var buf [8]string
		for i, k := range sortedKeys(u.Extra, buf[:0]) {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendStringArray(append(appendString(b, k), ':'), []string(u.Extra[k]))
		}
		b = append(b, '}')
	}
	return closeObject(b, start)
}

// appendStatus is a metav1.Status as encoding/json writes it: its ListMeta is always there,
// even empty. The details, rare in audit events and deep, go through encoding/json.
func appendStatus(b []byte, s *metav1.Status) []byte {
	b, start := openObject(b)
	b = appendOptionalFields(b, "kind", s.Kind, "apiVersion", s.APIVersion)
	b, metadata := openObject(append(b, `,"metadata":`...))
	b = appendOptionalFields(b, "selfLink", s.SelfLink, "resourceVersion", s.ResourceVersion, "continue", s.Continue)
	if n := s.RemainingItemCount; n != nil {
		b = strconv.AppendInt(append(b, `,"remainingItemCount":`...), *n, 10)
	}
	b = closeObject(b, metadata)
	b = appendOptionalFields(b, "status", s.Status, "message", s.Message, "reason", string(s.Reason))
	if s.Details != nil {
		b = appendJSON(append(b, `,"details":`...), s.Details)
	}
	if s.Code != 0 {
		b = strconv.AppendInt(append(b, `,"code":`...), int64(s.Code), 10)
	}
	return closeObject(b, start)
}

// appendTime is a metav1.MicroTime as it marshals itself: RFC 3339 in UTC with microseconds,
// null when zero. Written digit by digit: time.AppendFormat's general layout parsing was most of
// an event's encoding.
func appendTime(b []byte, mt metav1.MicroTime) []byte {
	if mt.IsZero() {
		return append(b, "null"...)
	}
	t := mt.UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		b = append(b, '"')
		return append(t.AppendFormat(b, metav1.RFC3339Micro), '"')
	}
	hour, minute, second := t.Clock()
	b = append(appendDigits(append(b, '"'), year, 4), '-')
	b = append(appendDigits(b, int(month), 2), '-')
	b = append(appendDigits(b, day, 2), 'T')
	b = append(appendDigits(b, hour, 2), ':')
	b = append(appendDigits(b, minute, 2), ':')
	b = append(appendDigits(b, second, 2), '.')
	return append(appendDigits(b, t.Nanosecond()/1000, 6), 'Z', '"')
}

// appendDigits appends n, which is not negative, zero-padded to width digits.
func appendDigits(b []byte, n, width int) []byte {
	b = append(b, make([]byte, width)...)
	for i := len(b) - 1; i >= len(b)-width; i-- {
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return b
}

func appendStringMap(b []byte, m map[string]string) []byte {
	b = append(b, '{')
	var buf [8]string
	for i, k := range sortedKeys(m, buf[:0]) {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(append(appendString(b, k), ':'), m[k])
	}
	return append(b, '}')
}

// appendField appends ,"name":value; a field of the event is never the first (kind is).
func appendField(b []byte, name, value string) []byte {
	b = append(append(append(b, `,"`...), name...), `":`...)
	return appendString(b, value)
}

// appendOptionalField is appendField for an omitempty field: nothing when value is empty.
func appendOptionalField(b []byte, name, value string) []byte {
	if value == "" {
		return b
	}
	return appendField(b, name, value)
}

// appendOptionalFields appends each name/value pair of an object's omitempty string fields, in
// order.
func appendOptionalFields(b []byte, namesAndValues ...string) []byte {
	for i := 0; i < len(namesAndValues); i += 2 {
		b = appendOptionalField(b, namesAndValues[i], namesAndValues[i+1])
	}
	return b
}

// openObject begins an object whose fields are appended as the event's are, each with a leading
// comma, so that omitempty fields need not know whether one came before them; closeObject ends
// it and drops the comma before its first field, at start.
func openObject(b []byte) (_ []byte, start int) {
	return append(b, '{'), len(b) + 1
}

func closeObject(b []byte, start int) []byte {
	if len(b) > start && b[start] == ',' {
		b = slices.Delete(b, start, start+1)
	}
	return append(b, '}')
}

func appendStrings(b []byte, name string, values []string) []byte {
	if len(values) == 0 {
		return b
	}
	b = append(append(append(b, `,"`...), name...), `":`...)
	return appendStringArray(b, values)
}

func appendStringArray(b []byte, values []string) []byte {
	if values == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, v := range values {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, v)
	}
	return append(b, ']')
}

// appendString is s as a JSON string, escaped as encoding/json escapes it: HTML characters,
// control characters, U+2028 and U+2029 escaped, invalid UTF-8 replaced by U+FFFD.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if plain[c] {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			b = append(append(b, s[start:i]...), asciiEscapes[c]...)
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if escape := runeEscape(r, size); escape != "" {
			b = append(append(b, s[start:i]...), escape...)
			start = i + size
		}
		i += size
	}
	return append(append(b, s[start:]...), '"')
}

// plain marks the bytes appendString copies without a second look: ASCII it does not escape.
var plain = func() (plain [256]bool) {
	for c := range utf8.RuneSelf {
		plain[c] = asciiEscapes[c] == ""
	}
	return plain
}()

// asciiEscapes is how encoding/json writes each ASCII byte it escapes; "" for those it copies.
var asciiEscapes = func() (escapes [utf8.RuneSelf]string) {
	for c := range ' ' {
		escapes[c] = fmt.Sprintf(`\u%04x`, c)
	}
	escapes['\b'], escapes['\f'], escapes['\n'], escapes['\r'], escapes['\t'] = `\b`, `\f`, `\n`, `\r`, `\t`
	escapes['"'], escapes['\\'] = `\"`, `\\`
	escapes['<'], escapes['>'], escapes['&'] = `\u003c`, `\u003e`, `\u0026`
	return escapes
}()

// runeEscape is how encoding/json writes a multi-byte rune it escapes, or "" when it copies it.
func runeEscape(r rune, size int) string {
	switch {
	case r == utf8.RuneError && size == 1:
		return `\ufffd`
	case r == '\u2028':
		return `\u2028`
	case r == '\u2029':
		return `\u2029`
	}
	return ""
}

// appendJSON is v as encoding/json marshals it; v is a metav1.StatusDetails, which always
// marshals.
func appendJSON(b []byte, v any) []byte {
	out, _ := json.Marshal(v)
	return append(b, out...)
}

// sortedKeys is m's keys in order, in keys (a buffer of the caller's) when they fit.
func sortedKeys[V any](m map[string]V, keys []string) []string {
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
