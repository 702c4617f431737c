package checkpoint

import (
	"encoding/json"
	"fmt"
)

// Serializer turns values (states, updates, Send arguments, resume values) into bytes and back.
type Serializer interface {
	Marshal(v any) ([]byte, error)
	Unmarshal(data []byte, v any) error
}

// JSON is the default Serializer: encoding/json, so state types control their encoding with the
// usual struct tags.
type JSON struct{}

// Marshal encodes v as JSON.
func (JSON) Marshal(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: encode %T: %w", v, err)
	}
	return b, nil
}

// Unmarshal decodes JSON data into v.
func (JSON) Unmarshal(data []byte, v any) error {
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("checkpoint: decode %T: %w", v, err)
	}
	return nil
}
