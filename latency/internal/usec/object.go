package usec

import (
	"bytes"
	"encoding/json"
	"reflect"
	"time"
)

// Field is one key of a JSON object and the Go value behind it, read and
// written in place: a type's MarshalJSON and UnmarshalJSON share one list
// of Fields, so its wire form is written down once, with no twin struct to
// keep in step (issue 44). A Duration field is float microseconds (Us) or
// float seconds (Seconds) on the wire; any other is encoding/json's.
type Field struct {
	key       string
	omitEmpty bool
	us, sec   *time.Duration
	v         any // a pointer, for encoding/json
}

// Us is a Duration written as float microseconds under key.
func Us(key string, d *time.Duration) Field { return Field{key: key, us: d} }

// UsOmitEmpty is Us, left out when zero.
func UsOmitEmpty(key string, d *time.Duration) Field {
	return Field{key: key, us: d, omitEmpty: true}
}

// Seconds is a Duration written as float seconds under key.
func Seconds(key string, d *time.Duration) Field { return Field{key: key, sec: d} }

// SecondsOmitEmpty is Seconds, left out when zero.
func SecondsOmitEmpty(key string, d *time.Duration) Field {
	return Field{key: key, sec: d, omitEmpty: true}
}

// Value is what p points to, written by encoding/json under key.
func Value(key string, p any) Field { return Field{key: key, v: p} }

// OmitEmpty is Value, left out when its value is zero (as the omitempty
// tag option: 0, "", false, a nil pointer, map or slice).
func OmitEmpty(key string, p any) Field { return Field{key: key, v: p, omitEmpty: true} }

// Micros converts d to float microseconds, the unit of the wire.
func Micros(d time.Duration) float64 { return float64(d) / 1e3 }

func (f *Field) empty() bool {
	switch {
	case !f.omitEmpty:
		return false
	case f.us != nil:
		return *f.us == 0
	case f.sec != nil:
		return *f.sec == 0
	}
	return reflect.ValueOf(f.v).Elem().IsZero()
}

// Marshal writes fields as one JSON object, in their order.
func Marshal(fields ...Field) ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	first := true
	for i := range fields {
		f := &fields[i]
		if f.empty() {
			continue
		}
		var v any
		switch {
		case f.us != nil:
			v = Micros(*f.us)
		case f.sec != nil:
			v = f.sec.Seconds()
		default:
			v = f.v
		}
		val, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		key, _ := json.Marshal(f.key)
		b.Write(key)
		b.WriteByte(':')
		b.Write(val)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// Unmarshal reads a JSON object into fields: each key present sets its
// value, durations rounded to the nanosecond; other keys are ignored.
func Unmarshal(data []byte, fields ...Field) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return err
	}
	for i := range fields {
		f := &fields[i]
		raw, ok := m[f.key]
		if !ok {
			continue
		}
		if f.v != nil {
			if err := json.Unmarshal(raw, f.v); err != nil {
				return err
			}
			continue
		}
		var x float64
		if err := json.Unmarshal(raw, &x); err != nil {
			return err
		}
		if f.us != nil {
			*f.us = Duration(x)
		} else {
			*f.sec = FromNanoseconds(x * float64(time.Second))
		}
	}
	return nil
}
