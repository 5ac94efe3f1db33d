package queueimpl

import (
	"encoding/json"
	"fmt"
	"reflect"
	"unicode/utf8"
)

// MarshalJSON encodes a JSON payload. encoding/json would turn invalid
// UTF-8 in a string into U+FFFD, silently storing something other than
// what was pushed; MarshalJSON refuses it instead, naming where it is.
func MarshalJSON(v any) (json.RawMessage, error) {
	if path, ok := invalidUTF8(reflect.ValueOf(v), "payload", 0); !ok {
		return nil, fmt.Errorf("queue: %s holds invalid UTF-8, which JSON cannot carry (encoding/json would store U+FFFD instead): clean it, or use a bytea column", path)
	}
	return json.Marshal(v)
}

// invalidUTF8 walks v for a string that is not valid UTF-8, returning its
// path and false when it finds one.
func invalidUTF8(v reflect.Value, path string, depth int) (string, bool) {
	if depth > 64 || !v.IsValid() {
		return "", true
	}
	if v.Type().Implements(jsonMarshaler) && v.Kind() != reflect.Pointer {
		return "", true // encodes itself
	}
	switch v.Kind() {
	case reflect.String:
		if !utf8.ValidString(v.String()) {
			return path, false
		}
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			return invalidUTF8(v.Elem(), path, depth+1)
		}
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			if t.Field(i).IsExported() {
				if p, ok := invalidUTF8(v.Field(i), path+"."+t.Field(i).Name, depth+1); !ok {
					return p, false
				}
			}
		}
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return "", true // bytes are base64-encoded
		}
		for i := range v.Len() {
			if p, ok := invalidUTF8(v.Index(i), fmt.Sprintf("%s[%d]", path, i), depth+1); !ok {
				return p, false
			}
		}
	case reflect.Map:
		it := v.MapRange()
		for it.Next() {
			if k := it.Key(); k.Kind() == reflect.String && !utf8.ValidString(k.String()) {
				return path + " (a key)", false
			}
			if p, ok := invalidUTF8(it.Value(), fmt.Sprintf("%s[%v]", path, it.Key()), depth+1); !ok {
				return p, false
			}
		}
	}
	return "", true
}

var jsonMarshaler = reflect.TypeFor[json.Marshaler]()
