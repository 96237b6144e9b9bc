package stripe

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// TestMetadataDecodesAsMap checks that metadata reads payonce's keys as
// decoding into a map[string]string does, with the same error, inside an
// object and inside a list.
func TestMetadataDecodesAsMap(t *testing.T) {
	type withMap struct {
		ID       string            `json:"id"`
		Metadata map[string]string `json:"metadata"`
		Amount   int64             `json:"amount"`
	}
	type withMeta struct {
		ID       string   `json:"id"`
		Metadata metadata `json:"metadata"`
		Amount   int64    `json:"amount"`
	}
	long := `"a_caller_key_that_is_longer_than_thirty_two_bytes"`
	members := []string{
		`"payonce_op":"op_1"`, `"payonce_key":"k-1"`, `"payonce_kind":"charge"`, `"payonce_refs":"[\"o\"]"`,
		`"PAYONCE_OP":"upper"`, `"payonce_op":null`, `"payonce_op":"esc\u00e9\"\\\/"`, `"payonce_\u006fp":"escaped key"`,
		`"payonce_kind" : "refund"`, `"other":"x"`, `"other":null`, long + `:"v"`, `"payonce_op":"\ud800"`,
		`"payonce_op":"caf` + "\xc3\xa9" + `"`, `"payonce_key":"bad` + "\xff" + `"`,
		`"other":1`, `"other":true`, `"other":{"a":1}`, `"other":[1]`, `"payonce_op":2.5`, "\"sp\"\n\t:\r\n\"v\"",
	}
	var inputs []string
	for _, m := range []string{`null`, `7`, `"s"`, `[]`, `true`, `{}`, "{ \n }"} {
		inputs = append(inputs, m)
	}
	for i := range members {
		inputs = append(inputs, "{"+members[i]+"}")
		for j := range members {
			inputs = append(inputs, "{ "+members[i]+" ,\n "+members[j]+" }")
			for k := 0; k < len(members); k += 3 {
				inputs = append(inputs, "{"+members[i]+","+members[j]+","+members[k]+"}")
			}
		}
	}
	same := func(a, b error) bool {
		return strings.ReplaceAll(fmt.Sprint(a), "withMap", "T") == strings.ReplaceAll(fmt.Sprint(b), "withMeta", "T")
	}
	for _, md := range inputs {
		for n, doc := range []string{`{"id":"pi_1","metadata":` + md + `,"amount":5}`, `{"id":"pi_1","amount":"x","metadata":` + md + `}`} {
			var a withMap
			errA := json.Unmarshal([]byte(doc), &a)
			var b withMeta
			errB := json.Unmarshal([]byte(doc), &b)
			if !same(errA, errB) {
				// One difference is by design: a wrong metadata value ends
				// the decoding, so a type error before it is not the one
				// reported. Both are errors, and an answer with an error is
				// not read.
				if errA == nil || errB == nil || n == 0 {
					t.Fatalf("%s: map error %v, metadata error %v", doc, errA, errB)
				}
				continue
			}
			if errA != nil {
				continue
			}
			for _, k := range []string{MetaOperation, MetaKey, MetaKind, MetaReferences, "other"} {
				if a.Metadata[k] != b.Metadata.get(k) && (k == MetaOperation || k == MetaKey || k == MetaKind) {
					t.Fatalf("%s: %s is %q in the map, %q in metadata", doc, k, a.Metadata[k], b.Metadata.get(k))
				}
			}
			if a.ID != b.ID || a.Amount != b.Amount {
				t.Fatalf("%s: other fields differ", doc)
			}
			var ma struct{ Data []withMap }
			var mb struct{ Data []withMeta }
			ea := json.Unmarshal([]byte(`{"data":[`+doc+`]}`), &ma)
			eb := json.Unmarshal([]byte(`{"data":[`+doc+`]}`), &mb)
			if !same(ea, eb) {
				t.Fatalf("list of %s: map error %v, metadata error %v", doc, ea, eb)
			}
		}
	}
}
