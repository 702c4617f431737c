package graph

import (
	"fmt"
	"reflect"
)

// Reducer merges an update into the current state and returns the new state. It must not modify
// cur or update in place (other readers may hold them); it is called on one goroutine at a time.
// Appending to a slice of cur is fine — it changes none of the elements others see — since the
// engine merges into each state once: no two states are appended to from the same one.
//
// To keep checkpoints small, a reducer adds what an update holds rather than taking it whole
// (see "Checkpoints hold what changed" in the package documentation).
type Reducer[S any] func(cur, update S) S

// Field tags understood by the default reducer, set as `graph:"..."` on fields of the state struct:
//
//	graph:"append"   slices: the update's elements are appended
//	graph:"merge"    maps: the update's entries are added, replacing entries with the same key
//	(no tag)         any type: the update's value replaces the current one when it is not the zero value
//
// A field that must be settable to its zero value can be a pointer.
const (
	tagAppend = "append"
	tagMerge  = "merge"
)

type fieldOp uint8

const (
	opReplace fieldOp = iota
	opAppend
	opMerge
)

type fieldPlan struct {
	index int
	op    fieldOp
}

// tagReducer builds the default reducer for S from its struct tags. A state that is not a struct is
// replaced by any non-zero update (maps are merged and slices appended).
func tagReducer[S any]() (Reducer[S], error) {
	t := reflect.TypeFor[S]()
	if t.Kind() != reflect.Struct {
		op := opReplace
		switch t.Kind() {
		case reflect.Map:
			op = opMerge
		case reflect.Slice:
			op = opAppend
		}
		return func(cur, update S) S {
			// Through pointers, so that an interface type S holding nil is a zero Value, not an
			// invalid one.
			c, u := reflect.ValueOf(&cur).Elem(), reflect.ValueOf(&update).Elem()
			c.Set(reduceValue(c, u, op))
			return cur
		}, nil
	}
	var plan []fieldPlan
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("graph")
		if tag == "-" {
			continue
		}
		if !f.IsExported() {
			return nil, fmt.Errorf("graph: state %s: field %s is unexported, so the default reducer cannot merge it; export it, tag it `graph:\"-\"`, or set a reducer", t, f.Name)
		}
		op := opReplace
		switch tag {
		case "":
		case tagAppend:
			if f.Type.Kind() != reflect.Slice {
				return nil, fmt.Errorf("graph: state %s: field %s has tag %q but is a %s, not a slice", t, f.Name, tag, f.Type)
			}
			op = opAppend
		case tagMerge:
			if f.Type.Kind() != reflect.Map {
				return nil, fmt.Errorf("graph: state %s: field %s has tag %q but is a %s, not a map", t, f.Name, tag, f.Type)
			}
			op = opMerge
		default:
			return nil, fmt.Errorf("graph: state %s: field %s has unknown tag graph:%q (want append, merge or -)", t, f.Name, tag)
		}
		plan = append(plan, fieldPlan{index: i, op: op})
	}
	return func(cur, update S) S {
		c := reflect.ValueOf(&cur).Elem()
		u := reflect.ValueOf(&update).Elem()
		for _, p := range plan {
			uf := u.Field(p.index)
			if uf.IsZero() {
				continue
			}
			cf := c.Field(p.index)
			cf.Set(reduceValue(cf, uf, p.op))
		}
		return cur
	}, nil
}

func reduceValue(cur, update reflect.Value, op fieldOp) reflect.Value {
	if update.IsZero() {
		return cur
	}
	switch op {
	case opAppend:
		return reflect.AppendSlice(cur, update)
	case opMerge:
		merged := reflect.MakeMapWithSize(cur.Type(), cur.Len()+update.Len())
		for it := cur.MapRange(); it.Next(); {
			merged.SetMapIndex(it.Key(), it.Value())
		}
		for it := update.MapRange(); it.Next(); {
			merged.SetMapIndex(it.Key(), it.Value())
		}
		return merged
	}
	return update
}
