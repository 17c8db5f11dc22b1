"""Five maintenance domains: what can go wrong, how the user sees it, how they talk about it.

A component is written "name:type" (type from `vocab_parts.TYPES`); a trailing `*` marks a
part that is often installed redundantly, which the generator may turn into an AND or k-of-n
group of numbered instances. Shared components ("name:type@sub1,sub2") hang under several of
the listed subsystems (common causes), which is what makes the trees DAGs.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Subsystem:
    label: str
    check: tuple[str, str, str]  # instruction, if faulty, if fine
    components: tuple[str, ...]


@dataclass(frozen=True)
class TopEvent:
    label: str
    symptoms: tuple[str, ...]
    subsystems: tuple[str, ...]  # keys into Domain.subsystems
    check: tuple[str, str, str]


@dataclass(frozen=True)
class Domain:
    name: str
    title: str  # "Car", "Air conditioning", ...
    tops: tuple[TopEvent, ...]
    subsystems: dict[str, Subsystem]
    shared: tuple[str, ...]
    history: tuple[str, ...]  # small talk the user offers when asked open questions
    excuses: tuple[str, ...]  # why an earlier answer was wrong


VEHICLE = Domain(
    name="vehicle",
    title="Car",
    tops=(
        TopEvent(
            "Engine cranks but does not start",
            (
                "My car cranks fine but the engine never catches.",
                "It turns over and over but just won't start.",
                "The starter spins the engine, but it never fires up.",
            ),
            ("fuel", "ignition", "air", "management"),
            ("Turn the key to start", "the engine cranks but never runs", "the engine starts"),
        ),
        TopEvent(
            "Engine overheats",
            (
                "The temperature needle keeps climbing into the red.",
                "My car overheats after about ten minutes of driving.",
                "Steam and a hot smell, and the gauge is maxed out.",
            ),
            ("circulation", "airflow", "coolant", "management"),
            (
                "Watch the temperature gauge after ten minutes of idling",
                "the needle is near the red",
                "the needle sits in the middle",
            ),
        ),
        TopEvent(
            "Engine does not crank",
            (
                "When I turn the key nothing happens, maybe a click.",
                "The engine won't even turn over.",
                "Dashboard lights come on, but the engine does not crank.",
            ),
            ("starting", "charging", "management"),
            ("Turn the key to start", "the engine does not turn", "the engine turns over"),
        ),
    ),
    subsystems={
        "fuel": Subsystem(
            "Fuel not reaching the engine",
            (
                "Spray a little starting fluid into the intake and try to start",
                "it fires briefly and dies",
                "no change at all",
            ),
            (
                "fuel pump:pump",
                "fuel filter:filter",
                "fuel pressure regulator:valve",
                "fuel pump relay:relay",
                "fuel pump fuse:fuse",
                "fuel tank:tank",
                "fuel line:hose",
                "fuel injector:valve*",
                "fuel rail sensor:sensor",
                "fuel pump wiring:wiring",
            ),
        ),
        "ignition": Subsystem(
            "No spark at the plugs",
            (
                "Hold a spare spark plug against the block on a plug lead while someone cranks",
                "there is no spark",
                "there is a strong blue spark",
            ),
            (
                "ignition coil:element*",
                "crankshaft position sensor:sensor",
                "camshaft position sensor:sensor",
                "ignition lead:wiring*",
                "ignition module:controller",
                "ignition fuse:fuse",
                "ignition relay:relay",
            ),
        ),
        "air": Subsystem(
            "Engine not getting enough air",
            ("Take the air box lid off and try starting", "it runs noticeably better", "no difference"),
            (
                "air filter:filter",
                "throttle body:valve",
                "mass airflow sensor:sensor",
                "intake hose:hose",
                "idle air control valve:valve",
                "intake air temperature sensor:sensor",
            ),
        ),
        "management": Subsystem(
            "Engine control unit mismanaging the engine",
            ("Plug in an OBD reader and read the fault codes", "it shows stored fault codes", "no codes are stored"),
            (
                "coolant temperature sensor:sensor",
                "oxygen sensor:sensor",
                "engine harness:wiring",
                "ECU power relay:relay",
                "immobiliser module:module",
                "ECU fuse:fuse",
            ),
        ),
        "circulation": Subsystem(
            "Coolant not circulating",
            (
                "Squeeze the top radiator hose when the engine is warm",
                "it is soft and barely warm",
                "it is hot and firm",
            ),
            (
                "water pump:pump",
                "thermostat:valve",
                "radiator hose:hose",
                "water pump belt:belt",
                "lower radiator hose:hose",
                "coolant bypass valve:valve",
            ),
        ),
        "airflow": Subsystem(
            "Not enough airflow through the radiator",
            ("Let the engine idle hot and look at the radiator fans", "the fans stay still", "the fans come on"),
            (
                "radiator fan:fan*",
                "fan relay:relay",
                "radiator:exchanger",
                "fan fuse:fuse",
                "fan switch:sensor",
                "fan wiring:wiring",
            ),
        ),
        "coolant": Subsystem(
            "Coolant being lost",
            (
                "Look at the coolant expansion tank with the engine cold",
                "the level is below MIN",
                "the level is between MIN and MAX",
            ),
            (
                "coolant reservoir:tank",
                "water pump seal:seal",
                "heater hose:hose",
                "head gasket:seal",
                "heater core:exchanger",
                "radiator cap:seal",
            ),
        ),
        "starting": Subsystem(
            "Starter not turning the engine",
            ("Turn the key and listen near the starter", "one click or nothing", "the starter whirs"),
            (
                "starter motor:motor",
                "starter relay:relay",
                "ignition switch:relay",
                "starter cable:wiring",
                "starter solenoid:relay",
                "neutral safety switch:sensor",
                "starter fuse:fuse",
                "flywheel ring gear:belt",
            ),
        ),
        "charging": Subsystem(
            "Not enough battery power",
            (
                "Turn on the headlights and watch them while someone cranks",
                "they dim to almost nothing",
                "they stay bright",
            ),
            (
                "battery:battery",
                "alternator:motor",
                "alternator belt:belt",
                "battery ground strap:wiring",
                "battery cable:wiring",
                "voltage regulator:controller",
                "main fusible link:fuse",
                "auxiliary battery:battery",
            ),
        ),
    },
    shared=(
        "engine control unit:controller@fuel,ignition,management,airflow,starting",
        "main fuse box:fuse@fuel,ignition,airflow,starting,charging",
        "chassis ground:wiring@ignition,starting,charging,management",
    ),
    history=(
        "It started this morning; yesterday it was fine.",
        "It has 140,000 km on it and was serviced last spring.",
        "It was raining hard last night.",
        "I filled up at a different station last week.",
    ),
    excuses=(
        "I was looking at the wrong part",
        "I read the wrong gauge",
        "my neighbour had the key in the wrong position",
        "I mixed it up with the one next to it",
    ),
)

HVAC = Domain(
    name="hvac",
    title="Air conditioning and heating",
    tops=(
        TopEvent(
            "Room not cooling",
            (
                "The AC runs but the room stays warm.",
                "It's blowing air, just not cold air.",
                "The office is 29 degrees even though the AC is on.",
            ),
            ("refrigerant", "outdoor", "indoor", "controls", "power"),
            ("Feel the air at a supply vent with cooling on", "the air is room temperature", "the air is cold"),
        ),
        TopEvent(
            "No heat from the furnace",
            (
                "The heating is on but the radiators stay cold.",
                "The furnace won't give any heat.",
                "It's freezing in here, the furnace isn't doing anything.",
            ),
            ("gas", "burner", "combustion", "controls", "power"),
            ("Feel the air at a supply vent with heating on", "the air is cold", "the air is warm"),
        ),
        TopEvent(
            "Water leaking from the indoor unit",
            (
                "There is water dripping from the indoor unit.",
                "A puddle keeps forming under the air handler.",
                "Water is running down the wall below the AC.",
            ),
            ("drainage", "refrigerant", "indoor"),
            ("Look under the indoor unit after an hour of cooling", "there is water", "it is dry"),
        ),
    ),
    subsystems={
        "refrigerant": Subsystem(
            "Refrigerant circuit not cooling",
            ("Feel the large copper pipe at the outdoor unit", "it is not cold at all", "it is cold and sweating"),
            (
                "compressor:compressor",
                "expansion valve:valve",
                "evaporator coil:exchanger",
                "refrigerant line:hose",
                "high pressure switch:sensor",
                "low pressure switch:sensor",
                "liquid line filter drier:filter",
                "service valve:valve",
            ),
        ),
        "outdoor": Subsystem(
            "Outdoor unit not rejecting heat",
            (
                "Stand by the outdoor unit while it runs",
                "the air blowing out is barely warm or the fan is still",
                "warm air blows out strongly",
            ),
            (
                "condenser fan:fan*",
                "condenser coil:exchanger",
                "outdoor contactor:relay",
                "outdoor unit fuse:fuse",
                "outdoor temperature sensor:sensor",
                "fan motor wiring:wiring",
            ),
        ),
        "indoor": Subsystem(
            "Weak airflow indoors",
            ("Hold your hand at a supply vent", "barely any air comes out", "a steady stream of air comes out"),
            (
                "blower motor:motor",
                "return air filter:filter",
                "blower belt:belt",
                "supply damper:valve",
                "supply duct:hose",
                "blower relay:relay",
                "indoor fan:fan*",
            ),
        ),
        "controls": Subsystem(
            "Controls not calling for the system",
            (
                "Set the thermostat three degrees past room temperature and wait two minutes",
                "nothing responds",
                "you hear the system start",
            ),
            (
                "thermostat:controller",
                "thermostat wire:wiring",
                "room temperature sensor:sensor",
                "thermostat batteries:battery",
                "zone damper:valve*",
                "control relay:relay",
            ),
        ),
        "power": Subsystem(
            "No power to the unit",
            ("Look at the lights and display on the unit", "everything is dark", "the lights are on"),
            (
                "unit breaker:breaker",
                "disconnect fuse:fuse",
                "control transformer:psu",
                "supply wiring:wiring",
                "door safety switch:relay",
            ),
        ),
        "gas": Subsystem(
            "Gas not reaching the burner",
            ("Look through the burner window during a call for heat", "no flame appears", "blue flames appear"),
            (
                "gas valve:valve",
                "gas line filter:filter",
                "gas pressure switch:sensor",
                "gas shut-off valve:valve",
                "gas regulator:valve",
            ),
        ),
        "burner": Subsystem(
            "Burner not lighting",
            (
                "Watch the igniter through the window during a call for heat",
                "the igniter never glows",
                "the igniter glows orange",
            ),
            (
                "hot surface igniter:element",
                "flame sensor:sensor",
                "burner orifice:filter",
                "igniter relay:relay",
                "rollout switch:sensor",
                "burner:element*",
            ),
        ),
        "combustion": Subsystem(
            "Combustion air or flue blocked",
            (
                "Listen for the inducer fan and watch the pressure switch light",
                "the light never comes on",
                "the light comes on after the fan starts",
            ),
            (
                "inducer fan:fan",
                "flue pipe:hose",
                "combustion air intake:filter",
                "vent pressure switch:sensor",
                "pressure switch hose:hose",
            ),
        ),
        "drainage": Subsystem(
            "Condensate not draining",
            ("Pour a cup of water into the drain pan", "it stays in the pan", "it drains away within a minute"),
            (
                "condensate pump:pump",
                "condensate drain line:hose",
                "float switch:sensor",
                "drain pan:tank",
                "drain trap:filter",
                "condensate pump fuse:fuse",
            ),
        ),
    },
    shared=(
        "main control board:controller@controls,outdoor,indoor,burner,combustion",
        "24 V transformer:psu@controls,power,gas,burner,drainage,indoor",
        "low-voltage wiring:wiring@controls,outdoor,gas,drainage,refrigerant",
    ),
    history=(
        "It was fine last week.",
        "A technician serviced it in spring.",
        "We had a storm two days ago.",
        "It has been making a rattling noise for a while.",
    ),
    excuses=(
        "I was looking at the wrong unit",
        "I had my hand on the wrong pipe",
        "I read the display upside down",
        "I checked the one in the next room by mistake",
    ),
)

PUMP = Domain(
    name="pump",
    title="Pumping station",
    tops=(
        TopEvent(
            "No flow at the station outlet",
            (
                "The pumps seem to run but nothing reaches the outlet.",
                "We've lost flow at the outlet completely.",
                "Flow meter at the outlet reads zero.",
            ),
            ("suction", "pumpunit", "drive", "discharge", "control"),
            ("Read the outlet flow meter", "it reads zero", "it shows normal flow"),
        ),
        TopEvent(
            "Pump trips on overload",
            (
                "The pump keeps tripping out after a few minutes.",
                "Overload alarm every time we start the pump.",
                "The motor protection trips again and again.",
            ),
            ("drive", "pumpunit", "cooling", "power"),
            ("Start the pump and wait ten minutes", "it trips out", "it keeps running"),
        ),
        TopEvent(
            "Low discharge pressure",
            (
                "Discharge pressure is way below normal.",
                "We only get half the usual pressure.",
                "Pressure at the header keeps sagging.",
            ),
            ("suction", "pumpunit", "discharge", "control"),
            ("Read the discharge pressure gauge", "it is well below normal", "it is normal"),
        ),
    ),
    subsystems={
        "suction": Subsystem(
            "Suction side starving the pump",
            ("Read the suction pressure gauge", "it is deep in vacuum", "it is slightly positive"),
            (
                "suction strainer:filter",
                "suction valve:valve",
                "supply tank:tank",
                "suction hose:hose",
                "foot valve:valve",
                "suction pressure sensor:sensor",
            ),
        ),
        "pumpunit": Subsystem(
            "Pump unit not delivering",
            ("Listen to the pump casing with a screwdriver to your ear", "it rattles like gravel", "a smooth hum"),
            ("main pump:pump*", "shaft seal:seal", "pump coupling:belt", "casing wear ring:seal", "priming pump:pump"),
        ),
        "drive": Subsystem(
            "Drive motor not running properly",
            (
                "Read the motor current on the panel ammeter",
                "it is zero or far above nameplate",
                "it is near nameplate",
            ),
            (
                "drive motor:motor",
                "motor contactor:relay",
                "variable frequency drive:controller",
                "drive belt:belt",
                "overload relay:relay",
                "motor cable:wiring",
            ),
        ),
        "discharge": Subsystem(
            "Discharge path blocked",
            (
                "Compare the pump outlet gauge with the header gauge",
                "high at the pump, low at the header",
                "about the same",
            ),
            (
                "check valve:valve",
                "discharge valve:valve",
                "discharge strainer:filter",
                "discharge hose:hose",
                "pressure relief valve:valve",
                "surge tank:tank",
            ),
        ),
        "control": Subsystem(
            "Control system not running the pumps",
            ("Look at the alarm list on the control panel", "there are active control alarms", "no active alarms"),
            (
                "pressure transmitter:sensor",
                "level sensor:sensor",
                "control cable:wiring",
                "flow switch:sensor",
                "HMI panel:module",
                "control relay:relay",
            ),
        ),
        "cooling": Subsystem(
            "Motor cooling inadequate",
            ("Feel the motor casing after ten minutes of running", "too hot to keep a hand on", "warm but comfortable"),
            (
                "motor cooling fan:fan",
                "cooling water line:hose",
                "motor temperature sensor:sensor",
                "oil cooler:exchanger",
                "cooling water valve:valve",
            ),
        ),
        "power": Subsystem(
            "Power supply to the pump unstable",
            ("Read the voltage on each phase at the panel", "one phase is low or missing", "all phases are balanced"),
            (
                "motor breaker:breaker",
                "control fuse:fuse",
                "phase monitor relay:relay",
                "supply cable:wiring",
                "soft starter:controller",
            ),
        ),
    },
    shared=(
        "station PLC:controller@drive,control,discharge,cooling",
        "panel power supply:psu@control,drive,power",
        "main breaker:breaker@drive,power,cooling,pumpunit",
    ),
    history=(
        "The pumps were overhauled in the summer.",
        "It started after the night shift.",
        "We had a power dip during the storm.",
        "The river level has been low this month.",
    ),
    excuses=(
        "I read the wrong gauge",
        "I was standing at pump B, not pump A",
        "the meter was on the wrong range",
        "I looked at yesterday's log by mistake",
    ),
)

SERVER = Domain(
    name="server",
    title="Web server",
    tops=(
        TopEvent(
            "Website returns errors",
            (
                "Our website shows error 502 for most visitors.",
                "Customers are getting error pages on the shop.",
                "The site loads, then throws server errors.",
            ),
            ("web", "database", "storage", "network"),
            ("Load the home page from outside", "an error page appears", "the page loads"),
        ),
        TopEvent(
            "Server will not boot",
            (
                "The server powers on but never finishes booting.",
                "After a restart the server is stuck and won't come up.",
                "The machine won't boot anymore.",
            ),
            ("power", "firmware", "storage", "cooling"),
            (
                "Power-cycle the server and watch the console",
                "it never reaches the login prompt",
                "it boots to the login prompt",
            ),
        ),
        TopEvent(
            "Server shuts down unexpectedly",
            (
                "The server keeps switching itself off.",
                "Random shutdowns, several times a day.",
                "The box just dies under load.",
            ),
            ("power", "cooling", "firmware"),
            ("Look at the uptime of the server", "it restarted within the last hour", "it has been up for days"),
        ),
    ),
    subsystems={
        "web": Subsystem(
            "Web tier not serving pages",
            ("Load the health page directly on each web node", "the health page fails", "the health page says OK"),
            (
                "web server:service*",
                "load balancer:service",
                "application service:service",
                "cache service:service",
                "session store:service",
                "web node disk:disk",
            ),
        ),
        "database": Subsystem(
            "Database not answering queries",
            ("Run a simple test query from the application host", "it hangs or errors", "it returns at once"),
            (
                "database service:service",
                "connection pooler:service",
                "database disk:disk",
                "database replica:service*",
                "database network port:port",
            ),
        ),
        "storage": Subsystem(
            "Storage array degraded",
            ("Open the RAID controller status page", "the array is degraded or offline", "the array is optimal"),
            (
                "data disk:disk*",
                "RAID controller:controller",
                "backplane cable:link",
                "RAID cache battery:battery",
                "storage expander:module",
            ),
        ),
        "network": Subsystem(
            "Server network link down",
            ("Ping the server from another machine", "no replies", "replies come back"),
            (
                "network card port:port",
                "patch cable:link",
                "switch port:port",
                "bonding uplink:link*",
                "firewall agent:service",
            ),
        ),
        "power": Subsystem(
            "Server not getting clean power",
            ("Look at the power LEDs on the back of the server", "an LED is amber or off", "all LEDs are green"),
            ("power supply unit:psu*", "PDU breaker:breaker", "power cord:wiring", "rack UPS:battery", "PDU fuse:fuse"),
        ),
        "cooling": Subsystem(
            "Server overheating",
            (
                "Read the inlet and CPU temperatures in the management interface",
                "CPU temperature is over 90 degrees",
                "temperatures are normal",
            ),
            (
                "chassis fan:fan*",
                "CPU heatsink:exchanger",
                "rack air filter:filter",
                "inlet temperature sensor:sensor",
                "room cooling unit:compressor",
            ),
        ),
        "firmware": Subsystem(
            "Boot firmware or hardware fault",
            ("Watch the POST codes on the front display", "it stops on an error code", "it runs through to boot"),
            (
                "memory module:module*",
                "boot disk:disk",
                "system board:controller",
                "CMOS battery:battery",
                "boot volume:disk",
                "riser card:module",
            ),
        ),
    },
    shared=(
        "baseboard management controller:controller@power,cooling,firmware",
        "rack power strip:fuse@power,storage,network,cooling",
        "top-of-rack switch:port@network,web,database",
    ),
    history=(
        "We deployed a new release yesterday.",
        "Traffic is about normal for a Monday.",
        "The machine room had maintenance over the weekend.",
        "Nothing changed that I know of.",
    ),
    excuses=(
        "I was logged into the staging server",
        "I read the wrong line of the output",
        "I looked at the other rack",
        "I copied the result from the wrong terminal",
    ),
)

NETWORK = Domain(
    name="network",
    title="Office network",
    tops=(
        TopEvent(
            "Office has no internet",
            (
                "Nobody in the office can get on the internet.",
                "The internet is down for the whole office.",
                "We can't load any websites since this morning.",
            ),
            ("wan", "routing", "dns", "switching", "power"),
            ("Open any website on an office PC", "it does not load", "it loads"),
        ),
        TopEvent(
            "Wi-Fi keeps dropping",
            (
                "The Wi-Fi drops every few minutes.",
                "Laptops keep losing the wireless connection.",
                "Wireless is unusable, it disconnects all the time.",
            ),
            ("wireless", "switching", "dns", "power"),
            ("Stay connected to the Wi-Fi for ten minutes", "it drops at least once", "it stays connected"),
        ),
        TopEvent(
            "Cannot reach the file server",
            (
                "The shared drive has disappeared for everyone.",
                "Nobody can open files on the server share.",
                "Mapped drives say the network path was not found.",
            ),
            ("fileserver", "switching", "dns", "power"),
            ("Open the shared drive from a PC", "it says the path was not found", "the folders open"),
        ),
    ),
    subsystems={
        "wan": Subsystem(
            "Internet uplink down",
            (
                "Log in to the router and look at the WAN status",
                "it says disconnected",
                "it says connected with an address",
            ),
            (
                "modem:controller",
                "uplink cable:link",
                "router WAN port:port",
                "ISP gateway:service",
                "modem power adapter:psu",
                "wall jack:link",
            ),
        ),
        "routing": Subsystem(
            "Router not forwarding traffic",
            ("Ping an outside address by number from a PC", "no replies", "replies come back"),
            (
                "edge router:controller",
                "firewall service:service",
                "router LAN port:port",
                "routing daemon:service",
                "router fan:fan",
            ),
        ),
        "dns": Subsystem(
            "Name resolution failing",
            ("Ping a website by number, then by name", "the number works, the name fails", "both work"),
            (
                "DNS resolver:service",
                "DHCP server:service",
                "DNS appliance:controller",
                "DNS server disk:disk",
                "DNS server port:port",
            ),
        ),
        "switching": Subsystem(
            "Switches not passing traffic",
            (
                "Look at the port lights on the office switches",
                "many lights are dark or blink amber",
                "the lights blink green",
            ),
            (
                "access switch:controller*",
                "switch uplink port:port",
                "trunk cable:link*",
                "switch power supply:psu*",
                "switch fan:fan",
            ),
        ),
        "wireless": Subsystem(
            "Access points failing",
            (
                "Look at the status light on the ceiling access points",
                "lights are off or flashing red",
                "lights are steady blue",
            ),
            (
                "access point:module*",
                "PoE injector:psu",
                "wireless controller:service",
                "AP uplink cable:link",
                "PoE switch port:port",
                "captive portal:service",
            ),
        ),
        "power": Subsystem(
            "Network closet without stable power",
            (
                "Look at the lights in the network closet",
                "some devices are dark or rebooting",
                "everything is lit and steady",
            ),
            (
                "closet UPS:battery",
                "closet breaker:breaker",
                "power strip:fuse",
                "closet cooling fan:fan",
                "UPS input cable:wiring",
            ),
        ),
        "fileserver": Subsystem(
            "File server not serving shares",
            ("Log in to the file server console", "the share service shows errors", "it looks healthy"),
            (
                "file share service:service",
                "server network port:port",
                "storage disk:disk*",
                "file server PSU:psu*",
                "directory service:service",
            ),
        ),
    },
    shared=(
        "core switch:controller@switching,routing,dns,fileserver,wireless",
        "closet UPS output:psu@power,switching,wireless,wan",
        "patch panel:link@switching,fileserver,wireless,wan",
    ),
    history=(
        "It worked fine on Friday.",
        "The cleaners were in the closet last night.",
        "We added five new laptops this week.",
        "The provider sent an email about maintenance.",
    ),
    excuses=(
        "I was looking at the wrong switch",
        "I was connected to the guest network",
        "I typed the wrong address",
        "I read the light on the port next to it",
    ),
)

DOMAINS: dict[str, Domain] = {d.name: d for d in (VEHICLE, HVAC, PUMP, SERVER, NETWORK)}
