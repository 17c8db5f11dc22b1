"""Failure-mode templates by component type, shared by every domain.

Why templates: five domains x ~25 components x 3-4 failure modes would be ~500 hand-written
entries; real maintenance manuals reuse the same failure modes per part type (a clogged
filter, a relay that does not click), so each type lists its modes once with `{c}` for the
component name. Each entry: (label, check instruction, observed if faulty, observed if fine).
"""

from __future__ import annotations

Mode = tuple[str, str, str, str]

# type -> (component-level event label, component check, modes)
TYPES: dict[str, tuple[tuple[str, str, str, str], list[Mode]]] = {
    "pump": (
        (
            "{C} delivers no flow",
            "Put a hand on the {c} while it should be running and watch the outlet",
            "the {c} is quiet and nothing comes out",
            "the {c} hums and liquid is moving",
        ),
        [
            (
                "{C} motor burnt out",
                "Smell around the {c} motor and feel its casing",
                "there is a burnt smell and the casing is cold",
                "no smell, and the casing is warm from running",
            ),
            (
                "Worn {c} impeller",
                "Listen to the {c} while it runs under load",
                "it whines and the pitch keeps wandering",
                "a steady, even hum",
            ),
            (
                "Seized {c} bearing",
                "With the power off, try to turn the {c} shaft by hand",
                "the shaft will not turn, or it grinds",
                "the shaft turns smoothly",
            ),
            (
                "Air-locked {c}",
                "Crack open the bleed screw on the {c}",
                "only air hisses out for a long time",
                "liquid comes out straight away",
            ),
        ],
    ),
    "filter": (
        (
            "{C} restricting flow",
            "Compare the pressure before and after the {c}",
            "there is a big pressure drop across the {c}",
            "the pressure is about the same on both sides",
        ),
        [
            (
                "Clogged {c}",
                "Take out the {c} and hold it up to the light",
                "it is caked with dark debris and no light comes through",
                "it is clean and light-coloured",
            ),
            (
                "Collapsed {c} element",
                "Take out the {c} and look at the shape of the element",
                "the element is crushed inward",
                "the element holds its shape",
            ),
            (
                "{C} fitted backwards",
                "Look at the flow arrow printed on the {c}",
                "the arrow points against the flow",
                "the arrow points with the flow",
            ),
        ],
    ),
    "valve": (
        (
            "{C} not regulating",
            "Watch the pressure downstream of the {c} while the system runs",
            "the pressure is way off and does not settle",
            "the pressure holds steady where it should",
        ),
        [
            (
                "{C} stuck closed",
                "Look at the position indicator on the {c} when it should be open",
                "the indicator shows fully closed",
                "the indicator shows open",
            ),
            (
                "{C} stuck open",
                "Look at the position indicator on the {c} when it should be shut",
                "the indicator still shows open",
                "the indicator shows closed",
            ),
            (
                "Leaking {c} seat",
                "Listen closely at the {c} while it is shut",
                "a hiss or trickle keeps going",
                "it is completely silent",
            ),
            (
                "{C} actuator failed",
                "Operate the {c} from the controls and watch its actuator",
                "the actuator does not move at all",
                "the actuator moves the stem",
            ),
        ],
    ),
    "sensor": (
        (
            "{C} giving false readings",
            "Compare the {c} reading on the display with what you expect",
            "the reading makes no sense for the conditions",
            "the reading looks plausible",
        ),
        [
            (
                "{C} reading stuck",
                "Watch the {c} value on the display for a minute",
                "the value never changes at all",
                "it moves a little as conditions change",
            ),
            (
                "{C} out of calibration",
                "Compare the {c} reading with a handheld reference",
                "they differ by a lot",
                "they agree closely",
            ),
            (
                "Corroded {c} connector",
                "Unplug the {c} connector and look at the pins",
                "there is green or white crust on the pins",
                "the pins are clean and shiny",
            ),
            (
                "Broken {c} wire",
                "Wiggle the {c} wiring while watching the reading",
                "the reading jumps or drops out",
                "the reading stays steady",
            ),
        ],
    ),
    "relay": (
        (
            "{C} not switching",
            "Listen at the {c} while someone switches the circuit on",
            "nothing happens at the {c}",
            "the {c} clicks and the load comes on",
        ),
        [
            (
                "{C} coil open",
                "Measure the resistance across the {c} coil pins",
                "the meter shows an open circuit",
                "it reads a normal coil resistance",
            ),
            (
                "Burnt {c} contacts",
                "Pull the {c} and look at its contacts",
                "the contacts are black and pitted",
                "the contacts look clean",
            ),
            (
                "{C} missing from socket",
                "Look at the {c} socket",
                "the {c} is loose or half out of its socket",
                "the {c} is seated firmly",
            ),
        ],
    ),
    "fuse": (
        (
            "{C} cutting power",
            "Check for voltage on both sides of the {c}",
            "there is voltage on one side only",
            "there is voltage on both sides",
        ),
        [
            (
                "Blown {c}",
                "Pull the {c} and look at the metal strip inside",
                "the strip is broken and the body is blackened",
                "the strip is intact",
            ),
            (
                "Corroded {c} holder",
                "Look at the terminals of the {c} holder",
                "the terminals are crusty with corrosion",
                "the terminals are clean",
            ),
        ],
    ),
    "breaker": (
        (
            "{C} cutting power",
            "Look at the {c} in the panel",
            "the {c} is off or in the tripped position",
            "the {c} is on",
        ),
        [
            (
                "Tripped {c}",
                "Look at the lever of the {c}",
                "the lever sits in the middle, tripped position",
                "the lever is firmly on",
            ),
            (
                "Worn {c} tripping under load",
                "Reset the {c} and run the load for five minutes",
                "it trips again after a minute or two",
                "it stays on the whole time",
            ),
            (
                "Loose {c} terminal",
                "With the power isolated, try the screws on the {c} terminals",
                "a terminal screw is loose and the wire is discoloured",
                "all screws are tight",
            ),
        ],
    ),
    "motor": (
        (
            "{C} not running",
            "Switch the {c} on and watch the shaft",
            "the shaft does not turn, maybe a hum",
            "the shaft spins up normally",
        ),
        [
            (
                "Burnt {c} winding",
                "Measure the resistance of each {c} winding",
                "one winding reads open or much lower than the others",
                "all windings read about the same",
            ),
            (
                "Seized {c} bearing",
                "With the power off, turn the {c} shaft by hand",
                "the shaft is stiff or grinds",
                "the shaft turns freely",
            ),
            (
                "Failed {c} start capacitor",
                "Look at the top of the {c} start capacitor",
                "it is bulged and leaking",
                "it is flat and clean",
            ),
            (
                "Worn {c} brushes",
                "Take off the {c} brush caps and look at the brushes",
                "the brushes are worn down to stubs",
                "the brushes are long and even",
            ),
        ],
    ),
    "fan": (
        (
            "{C} not moving air",
            "Hold a strip of paper near the {c} while it should be on",
            "the paper does not move",
            "the paper is pulled hard by the airflow",
        ),
        [
            (
                "Failed {c} motor",
                "Watch the {c} when it should be running",
                "the blades do not turn",
                "the blades spin at speed",
            ),
            (
                "Broken {c} blade",
                "With the power off, look at the {c} blades",
                "a blade is cracked or missing",
                "all blades are whole",
            ),
            (
                "Dust-clogged {c}",
                "Look at the {c} and its grille",
                "everything is matted with dust",
                "it is reasonably clean",
            ),
            (
                "Weak {c} capacitor",
                "Switch the {c} on and give the blades a gentle push",
                "it only starts spinning after the push",
                "it starts on its own",
            ),
        ],
    ),
    "belt": (
        (
            "{C} not driving",
            "Watch the {c} and the pulleys while it runs",
            "the driven pulley lags or stops",
            "everything turns together",
        ),
        [
            ("Snapped {c}", "Look at the {c}", "the belt is broken and hanging off", "the belt is in place"),
            ("Slipping {c}", "Listen as the load comes on", "there is a loud squeal", "no squeal at all"),
            (
                "Cracked {c}",
                "Twist the {c} and look at the ribs",
                "there are deep cracks across the ribs",
                "the ribs look smooth",
            ),
        ],
    ),
    "wiring": (
        (
            "{C} fault",
            "Measure voltage at the far end of the {c}",
            "the voltage is low or missing",
            "full voltage is there",
        ),
        [
            (
                "Chafed {c} insulation",
                "Follow the {c} and look where it passes sharp edges",
                "bare copper shows where it has rubbed",
                "the insulation is intact all along",
            ),
            (
                "Loose {c} connector",
                "Tug gently on each {c} connector",
                "one connector is loose and was not latched",
                "all connectors are latched",
            ),
            (
                "Corroded {c} ground",
                "Measure resistance from the {c} ground to the frame",
                "it reads several ohms",
                "it reads well under one ohm",
            ),
        ],
    ),
    "battery": (
        (
            "{C} not supplying power",
            "Measure the {c} voltage",
            "the voltage is well below its rating",
            "it reads right at its rating",
        ),
        [
            ("Discharged {c}", "Check the state-of-charge indicator on the {c}", "it shows empty", "it shows charged"),
            (
                "Corroded {c} terminals",
                "Look at the {c} terminals",
                "there is white, fuzzy corrosion",
                "the terminals are clean",
            ),
            (
                "Dead cell in {c}",
                "Load-test the {c}",
                "the voltage collapses under load",
                "the voltage holds under load",
            ),
        ],
    ),
    "controller": (
        (
            "{C} malfunction",
            "Look at the status display of the {c}",
            "it shows an error or nothing at all",
            "it shows normal operation",
        ),
        [
            (
                "{C} firmware crash",
                "Look at the status LED on the {c}",
                "it is blinking an error pattern",
                "it is steady green",
            ),
            (
                "Failed {c} power stage",
                "Measure the supply voltage at the {c} connector",
                "it is near zero",
                "it is at the correct voltage",
            ),
            (
                "Wrong {c} settings",
                "Read back the {c} settings and compare them with the documentation",
                "a setting differs from the documented value",
                "all settings match",
            ),
            (
                "Water damage inside {c}",
                "Open the {c} cover and look at the board inside",
                "there are tide marks and corrosion",
                "the board is clean and dry",
            ),
        ],
    ),
    "hose": (
        (
            "{C} leaking or blocked",
            "Run the system and look along the {c}",
            "there is a leak or the hose is flat",
            "the hose is firm and dry",
        ),
        [
            (
                "Split {c}",
                "Run a hand along the {c} while the system runs",
                "there is a wet split in the hose",
                "it is dry all along",
            ),
            (
                "Kinked {c}",
                "Trace the route of the {c}",
                "there is a sharp kink that flattens it",
                "it runs in smooth curves",
            ),
            ("Loose {c} clamp", "Try to turn the clamps on the {c}", "a clamp turns freely", "the clamps are tight"),
        ],
    ),
    "compressor": (
        (
            "{C} not compressing",
            "Read the high- and low-side pressures at the {c}",
            "the two pressures are almost equal",
            "there is a big difference between them",
        ),
        [
            (
                "{C} clutch not engaging",
                "Watch the {c} clutch plate when cooling is called for",
                "the plate does not spin",
                "the plate spins with the pulley",
            ),
            (
                "Worn {c} valves",
                "Feel the {c} discharge line while it runs",
                "it is only lukewarm",
                "it is hot to the touch",
            ),
            (
                "Refrigerant leak at {c}",
                "Look at the {c} fittings for oily residue",
                "there are oily, dusty patches at the fittings",
                "the fittings are dry and clean",
            ),
        ],
    ),
    "exchanger": (
        (
            "{C} not transferring heat",
            "Feel the inlet and outlet lines of the {c}",
            "they are about the same temperature",
            "there is a clear temperature difference",
        ),
        [
            (
                "Dirty {c} fins",
                "Shine a torch through the {c} fins",
                "they are packed with dirt, no light gets through",
                "light shines through",
            ),
            (
                "Internally blocked {c}",
                "Feel the {c} surface in several spots",
                "there are cold patches next to hot ones",
                "it is evenly warm",
            ),
            ("Leaking {c}", "Look under and around the {c}", "there is a puddle or residue", "it is dry"),
        ],
    ),
    "disk": (
        (
            "{C} unavailable",
            "Check whether {c} shows up in the storage list",
            "it is missing or marked failed",
            "it is listed and healthy",
        ),
        [
            (
                "{C} media errors",
                "Run a SMART check on {c}",
                "the reallocated sector count is climbing",
                "SMART passes with zero reallocated sectors",
            ),
            (
                "{C} controller dead",
                "Look at the activity LED of {c}",
                "the LED is off or solid amber",
                "the LED flickers with activity",
            ),
            (
                "Loose {c} cable",
                "Reseat the {c} data cable",
                "the connector was half out",
                "it was already fully seated",
            ),
        ],
    ),
    "psu": (
        (
            "{C} out of spec",
            "Measure the output voltage of the {c}",
            "it is below tolerance or zero",
            "it is within tolerance",
        ),
        [
            (
                "Failed {c} fan",
                "Hold a hand at the exhaust of the {c}",
                "no airflow and it is very hot",
                "steady warm airflow",
            ),
            (
                "Bulged capacitors in {c}",
                "Look at the capacitors inside the {c} through the grille",
                "several capacitor tops are domed",
                "all capacitor tops are flat",
            ),
            (
                "{C} input cable unplugged",
                "Look at the power cable going into the {c}",
                "the cable is loose or out",
                "the cable is firmly in",
            ),
        ],
    ),
    "link": (
        ("{C} link down", "Look at the link light for the {c}", "the link light is off", "the link light is on"),
        [
            (
                "Damaged {c}",
                "Swap the {c} for a known-good spare",
                "the link comes up with the spare",
                "nothing changes with the spare",
            ),
            (
                "Unseated {c} plug",
                "Push the {c} plugs in at both ends",
                "one plug clicks in further than before",
                "both were already seated",
            ),
            (
                "Dirty {c} connector",
                "Inspect the {c} connector end",
                "the end face is dusty or smudged",
                "the end face is clean",
            ),
        ],
    ),
    "port": (
        (
            "{C} not passing traffic",
            "Watch the traffic counters on {c}",
            "the counters are not increasing",
            "the counters climb steadily",
        ),
        [
            (
                "{C} disabled in config",
                "Look at the status of {c} on the management page",
                "it says administratively down",
                "it says up",
            ),
            (
                "Duplex mismatch on {c}",
                "Compare the speed and duplex shown for both ends of {c}",
                "one end is full duplex and the other half",
                "both ends match",
            ),
            (
                "CRC errors on {c}",
                "Watch the error counters on {c} for a minute",
                "the CRC error count keeps rising",
                "the error count stays at zero",
            ),
        ],
    ),
    "service": (
        (
            "{C} not responding",
            "Send a test request to the {c}",
            "the request times out or errors",
            "the request gets a normal answer",
        ),
        [
            (
                "{C} process crashed",
                "Look for the {c} process in the process list",
                "it is not running",
                "it is running",
            ),
            (
                "{C} out of memory",
                "Look at the memory use of the {c} and its log",
                "it is at its limit with out-of-memory kills in the log",
                "memory use is well below the limit",
            ),
            (
                "Bad {c} config change",
                "Look at the most recent change to the {c} configuration",
                "someone edited it shortly before the problem started",
                "nothing has changed in weeks",
            ),
            (
                "Expired {c} certificate",
                "Check the expiry date of the {c} certificate",
                "it expired recently",
                "it is valid for months",
            ),
        ],
    ),
    "tank": (
        (
            "{C} level wrong",
            "Read the level gauge on the {c}",
            "the level is far outside the normal band",
            "the level is in the normal band",
        ),
        [
            (
                "Empty {c}",
                "Look through the sight glass of the {c}",
                "the sight glass is empty",
                "liquid is visible in the sight glass",
            ),
            (
                "Blocked {c} vent",
                "Open the {c} filler cap slowly",
                "there is a strong hiss of vacuum or pressure",
                "no hiss at all",
            ),
            (
                "Contaminated {c}",
                "Draw a sample from the bottom of the {c}",
                "the sample is cloudy or has water in it",
                "the sample is clear",
            ),
        ],
    ),
    "element": (
        ("{C} not working", "Watch the {c} when it should come on", "it never comes on", "it comes on as expected"),
        [
            (
                "Burnt-out {c}",
                "Measure the resistance across the {c}",
                "the meter shows an open circuit",
                "it reads a normal resistance",
            ),
            ("Cracked {c}", "Take out the {c} and look at it closely", "there is a hairline crack", "it is whole"),
            (
                "Loose {c} lead",
                "Tug gently on the leads of the {c}",
                "one lead comes off in your hand",
                "both leads are firm",
            ),
        ],
    ),
    "module": (
        (
            "{C} not detected",
            "Look at the hardware inventory screen for the {c}",
            "the {c} is missing or shows errors",
            "the {c} is listed as healthy",
        ),
        [
            ("Failed {c}", "Run the built-in diagnostic on the {c}", "the test reports errors", "the test passes"),
            (
                "Unseated {c}",
                "Press the {c} firmly into its slot",
                "it was not fully latched and clicks in",
                "it was already fully latched",
            ),
            (
                "Incompatible {c} firmware",
                "Compare the {c} firmware version with the support list",
                "the version is not on the list",
                "the version is supported",
            ),
        ],
    ),
    "seal": (
        ("{C} leaking", "Look at the area around the {c}", "there is fresh liquid around it", "it is dry"),
        [
            (
                "Worn {c} face",
                "Wipe the {c} dry and watch it while running",
                "it starts dripping again within a minute",
                "it stays dry",
            ),
            (
                "Hardened {c}",
                "Press on the {c} with a fingernail (power off)",
                "it is hard and cracked",
                "it is soft and springy",
            ),
        ],
    ),
}
