package a2a

import "github.com/agiraph/agiraph/internal/a2awire"

// ProtocolVersion is the version of A2A the package speaks.
const ProtocolVersion = a2awire.ProtocolVersion

// The states of a task.
const (
	StateSubmitted     = a2awire.StateSubmitted
	StateWorking       = a2awire.StateWorking
	StateInputRequired = a2awire.StateInputRequired
	StateCompleted     = a2awire.StateCompleted
	StateCanceled      = a2awire.StateCanceled
	StateFailed        = a2awire.StateFailed
	StateUnknown       = a2awire.StateUnknown
)

// The protocol's objects, as the handler sends them.
type (
	AgentCard      = a2awire.AgentCard
	Capabilities   = a2awire.Capabilities
	SecurityScheme = a2awire.SecurityScheme
	Skill          = a2awire.Skill
	Task           = a2awire.Task
	Status         = a2awire.Status
	Message        = a2awire.Message
	Part           = a2awire.Part
	File           = a2awire.File
	Artifact       = a2awire.Artifact
	StatusUpdate   = a2awire.StatusUpdate
	ArtifactUpdate = a2awire.ArtifactUpdate
	PushConfig     = a2awire.PushConfig
	PushAuth       = a2awire.PushAuth
	TaskPushConfig = a2awire.TaskPushConfig
)
