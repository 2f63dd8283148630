// type_name: CalendarActions

// The following types define the structure of an object of type CalendarActions
// that represents a list of requested calendar actions

export type CalendarActions = {
    actions: Action[];
};

export type Action =
    | AddEventAction
    | RemoveEventAction
    | AddParticipantsAction
    | ChangeTimeRangeAction
    | FindEventsAction
    | UnknownAction;

export type AddEventAction = {
    actionType: 'add event';
    event: Event;
};

export type RemoveEventAction = {
    actionType: 'remove event';
    eventReference: EventReference;
};

export type AddParticipantsAction = {
    actionType: 'add participants';
    // event to be augmented; if not specified assume last event discussed
    eventReference?: EventReference;
    // new participants (one or more)
    participants: string[];
};

export type ChangeTimeRangeAction = {
    actionType: 'change time range';
    eventReference?: EventReference;
    timeRange: EventTimeRange;
};

export type FindEventsAction = {
    actionType: 'find events';
    eventReference: EventReference;
};

// if the user types text that can not easily be understood as a calendar action,
// this action is used
export interface UnknownAction {
    actionType: 'unknown';
    text: string;
}

export type EventTimeRange = {
    startTime?: string;
    endTime?: string;
    duration?: string;
};

export type Event = {
    // date (example: March 22, 2024) or relative date (example: after EventReference)
    day: string;
    timeRange: EventTimeRange;
    description: string;
    location?: string;
    participants?: string[];
};

export type EventReference = {
    day?: string;
    dayRange?: string;
    timeRange?: EventTimeRange;
    description?: string;
    location?: string;
    participants?: string[];
};
