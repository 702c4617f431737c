package models_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/agiraph/agiraph/models"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/scripted"
)

// Models are named "provider/model". A model of your own — here a scripted one, named
// "scripted/planner" — is given with WithModels; a name no provider serves is an error of its
// kind.
func ExampleNew() {
	mine := scripted.New("planner", scripted.Turn{Text: "Plan: three nodes."})
	m, err := models.New("scripted/planner", models.WithModels(mine))
	if err != nil {
		panic(err)
	}
	resp, err := m.Generate(context.Background(), providers.Request{Messages: []providers.Message{providers.UserText("Plan the report.")}})
	if err != nil {
		panic(err)
	}
	fmt.Println(resp.Message.Text())

	_, err = models.New("nosuch/model")
	fmt.Println(errors.Is(err, providers.ErrUnknownModel))
	// Output:
	// Plan: three nodes.
	// true
}
