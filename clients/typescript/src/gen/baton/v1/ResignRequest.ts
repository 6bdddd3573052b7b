// Original file: baton/v1/leader_election.proto


export interface ResignRequest {
}

export interface ResignRequest__Output {
}
