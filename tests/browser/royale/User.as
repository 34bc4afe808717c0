package
{
    /**
     * What the bridge's backend answers as {"_explicitType": "com.example.User", ...}: a typed
     * object that amfgate makes of plain JSON, read into this class by its alias.
     */
    public class User
    {
        public var id:int;
        public var name:String;
        public var born:Date;
        public var avatar:Object;
    }
}
