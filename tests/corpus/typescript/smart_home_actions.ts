// type_name: HomeActions

// TypeChat-style actions for a smart home, written without `export` and with
// one generic action shape instantiated per action.

type Action<Name extends string, Parameters = {}> = {
    actionName: Name;
    parameters: Parameters;
};

type Room = "kitchen" | "living room" | "bedroom" | "hall";

interface LightSettings {
    room: Room;
    // 0 (off) to 100 (full)
    brightness?: number;
    color?: "warm" | "cool" | "daylight";
}

interface ThermostatSettings {
    room: Room;
    celsius: number;
}

type TurnOnLights = Action<"turn on lights", LightSettings>;
type TurnOffLights = Action<"turn off lights", { room: Room }>;
type SetThermostat = Action<"set thermostat", ThermostatSettings>;
type ReportStatus = Action<"report status">;

// Text that is not a smart home request.
interface UnknownAction {
    actionName: "unknown";
    text: string;
}

type HomeActions = {
    actions: (TurnOnLights | TurnOffLights | SetThermostat | ReportStatus | UnknownAction)[];
};
