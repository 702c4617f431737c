module github.com/agiraph/agiraph

go 1.25

require github.com/google/uuid v1.6.0

require go.uber.org/goleak v1.3.0
